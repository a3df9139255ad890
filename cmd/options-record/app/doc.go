// Package app wires the options-record commands (serve, import, sql) from
// their options to the packages that do the work. It owns start-up order and
// shutdown, never flags or signals: package main parses the command line and
// hands a context that is cancelled on SIGINT/SIGTERM, so tests run the
// commands in-process.
//
// `serve` is a list of components (database, store, journal, rule sync,
// what needs the prepared store, metrics, webhook) that one lifecycle
// starts in order and stops in the reverse order (lifecycle.go); every
// HTTP listener is built and shut down the same way (httpserver.go).
package app

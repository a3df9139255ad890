// Package cmdtesting holds what the tests of kubectl record's verbs share
// (as kubectl's pkg/cmd/testing): golden files refreshed with -update, and
// a record server that reports the field selectors it was sent. Only
// tests import it.
package cmdtesting

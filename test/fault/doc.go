// Package fault holds the sink's fault tests: `options-record serve` built
// and run as a real process on a throwaway PostgreSQL (package pgembed,
// fsync on), loaded over HTTPS on loopback, and then killed with SIGKILL,
// stopped with SIGTERM, deprived of its database, slowed by a table lock or
// given a full journal disk. Each test checks that every batch the sink
// acknowledged is in PostgreSQL exactly once afterwards, and that what it
// could not take it refused with a status the apiserver retries.
//
// The tests need the PostgreSQL server binaries (as pgtest does) and are
// skipped with -short. The full-disk test mounts a tmpfs and so needs root.
// They never listen beyond 127.0.0.1 and stop every process they start.
package fault

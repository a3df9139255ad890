// Package pgtest hands each integration test a fresh, empty PostgreSQL database.
//
// NewDatabase creates a database with a unique name and drops it (WITH (FORCE)) when the test
// ends. The server behind the databases is shared by the whole test binary, started lazily
// the first time a test asks, from the first source that works:
//
//  1. OPTIONS_RECORD_TEST_DATABASE_URL, a superuser DSN (URL or keyword/value) of an existing
//     server. When it is set it is the only source tried: a broken URL fails the tests instead of
//     silently testing against something else.
//  2. A postgres:15 container through testcontainers-go, when a Docker engine answers within a
//     few seconds (testcontainers' Ryuk removes it if the test binary is killed).
//  3. A throwaway cluster from the local server binaries (package pgembed) in a temporary
//     directory, without fsync, removed afterwards (the kernel stops it if the binary is killed).
//
// If no source works, the test fails under `make` (which sets OPTIONS_RECORD_REQUIRE_DEPS=1
// after installing the server binaries), listing why each source did not work; a plain `go
// test ./...` on a machine without PostgreSQL skips it with one line naming `make test`.
// Under `go test -short` NewDatabase skips every integration test.
//
// Every package that calls NewDatabase must stop the shared server after its tests:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// NewDatabase fails the test if the package has no such TestMain. pgtest is for tests only and
// must never be imported by non-test code.
package pgtest

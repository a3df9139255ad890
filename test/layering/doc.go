// Package layering holds the import check of the module's layers (run by
// `go test ./...` and `make lint`): which package may import which, and
// which packages stay pure (no database driver, store, Kubernetes client or
// HTTP router, even through another package). docs/architecture.md explains
// the layers; the table in layering_test.go is their single source.
package layering

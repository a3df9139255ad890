// Package restoreapi is the direct HTTPS front door of the restore API:
// JSON (or YAML) under /api/v1, routed with go-chi and described by the
// OpenAPI document it serves at /api/v1/openapi.json, for scripts and
// callers with a bearer token.
//
// It owns the routes and the table they and the OpenAPI document are built
// from (server.go, openapi.go), the reading of parameters and bodies
// (params.go), the answers in JSON or YAML (handlers.go, yaml.go), errors as
// HTTP statuses (errors.go), authentication (auth.go: a bearer token checked
// with TokenReview, or the static token of the standalone mode) and the
// caps on requests in flight (limits.go).
//
// Every operation is carried out by package history (reads) or package
// restore (manifests, restores, plans), for the authenticated caller: this
// package decides nothing about what a caller may read or restore.
package restoreapi

// Package shipcheck holds the checks of what Options Record ships besides its
// code: the kustomize tree under deploy/ (and the kind overlay in
// kind-config/), the kind cluster configuration, the Dockerfile and
// .dockerignore. It is a separate module so that kustomize, kind and BuildKit
// stay out of the product's go.mod.
//
// The tests render every kustomization with kustomize's own Go API (krusty),
// apply the result to the real kube-apiserver of the end-to-end harness
// (test/framework/controlplane: server-side dry-run for workloads, for real
// for the CRD, RBAC and sample rules), run the sink's cluster-facing code
// under exactly the shipped RBAC by impersonating its service account, and
// check that forbidden actions stay forbidden. The kind configuration is
// decoded with kind's v1alpha4 types and cross-checked against the files the
// e2e suite uses; the Dockerfile is parsed and linted with BuildKit's
// Dockerfile frontend and compared with `make build`.
//
// Like the e2e tests, the control-plane tests need OPTIONS_RECORD_CONTROLPLANE_DIR
// (`make test` sets it); `go test -short` runs only the static checks.
package shipcheck

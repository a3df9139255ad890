// Package aggregated serves the aggregated API
// record.optionsrecord.io/v1alpha1, served with k8s.io/apiserver's generic
// API server and reached through the kube-apiserver's API aggregation.
//
// It owns the server's configuration: secure serving, the delegation of
// authentication and authorization to the kube-apiserver, the caps, the
// OpenAPI documents and the group's installation. The REST storage of the
// resources, served from the history and restore services as the caller
// (docs/aggregated-api.md lists them), is in registry/: the record's
// reads in registry/record, restores and plans in registry/restores.
//
// It must never start an informer or a watch: no core shared informers, no
// admission, no priority-and-fairness, no extension-apiserver-authentication
// ConfigMap controller. The front-proxy CA comes from a file (re-read when it
// changes); TokenReview and SubjectAccessReview are the only calls it makes
// to the kube-apiserver.
package aggregated

// Package aggregated serves the aggregated API
// record.optionsrecord.io/v1alpha1, served with k8s.io/apiserver's generic
// API server and reached through the kube-apiserver's API aggregation.
//
// It owns the server's configuration and the REST storage of its
// resources, each served from the history and restore services as the
// caller (docs/aggregated-api.md lists them): one file per kind of record,
// each with its namespaced and cluster-scoped resource.
//
// It must never start an informer or a watch: no core shared informers, no
// admission, no priority-and-fairness, no extension-apiserver-authentication
// ConfigMap controller. The front-proxy CA comes from a file (re-read when it
// changes); TokenReview and SubjectAccessReview are the only calls it makes
// to the kube-apiserver.
package aggregated

// Package aggregated is the prototype (issue 15) of the aggregated API
// record.optionsrecord.io/v1alpha1, served with k8s.io/apiserver's generic
// API server and reached through the kube-apiserver's API aggregation.
//
// It owns the server's configuration and the REST storage of two resources:
// deletions (namespaced, get/list, server-side Table, field selectors,
// limit/continue) served from an in-memory slice, and restores (namespaced,
// create honouring dryRun, get/list) whose status echoes the caller as the
// front proxy forwarded it.
//
// It must never start an informer or a watch: no core shared informers, no
// admission, no priority-and-fairness, no extension-apiserver-authentication
// ConfigMap controller. The front-proxy CA comes from a file (re-read when it
// changes); TokenReview and SubjectAccessReview are the only calls it makes
// to the kube-apiserver.
package aggregated

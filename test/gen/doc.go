// Package gen builds audit events and Kubernetes objects for tests and the
// benchmark: a default event changed by modifiers, in the style of
// cert-manager's test/unit/gen (event(Verb("delete"), User("bob"), ...)).
// The shapes follow what a real kube-apiserver sends (docs/semantics.md).
package gen

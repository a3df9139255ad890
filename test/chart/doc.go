// Package chart checks the Helm chart deploy/charts/options-record against
// the kustomize tree it packages (deploy/): for each set of values that has a
// kustomize counterpart (the defaults and deploy/, each switch and its
// component), both are rendered — the chart with the Helm Go SDK, as `helm
// template` does, deploy/ with kustomize's Go API — and compared object by
// object after dropping only Helm's own labels. Whatever an object of one
// says, the other says the same: they cannot drift. Helm's lint must pass,
// the files the chart carries must be copies of deploy/'s, and the rendered
// chart must apply server-side (dry run) to the real kube-apiserver of the
// end-to-end harness (test/framework/controlplane).
//
// It is a module of its own, as test/shipcheck is: Helm needs newer
// k8s.io modules than the product's go.mod pins.
package chart

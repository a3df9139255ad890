// Package aggregated proves the issue-15 prototype (package aggregated at
// the module root) on the real control plane: the kube-apiserver proxies
// record.optionsrecord.io/v1alpha1 to the generic API server running in the
// test process on loopback, and the real kubectl talks to it as a token
// user, a client-certificate user, an impersonating admin and a user with
// no rights. It also checks, in the apiserver's audit log, that the
// aggregated server never lists or watches anything, and measures how a
// namespace deletion behaves while the aggregated API is down.
package aggregated

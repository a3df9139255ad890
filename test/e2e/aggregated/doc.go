// Package aggregated measures, on the real control plane, how the
// kube-apiserver's namespace controller fares while the aggregated API
// (record.optionsrecord.io, package api/aggregated) is down:
// the server is stopped, namespaces are deleted, the server comes back, and
// the test reports how long each namespace stayed Terminating and checks
// that it goes by itself. It is a measurement of several minutes, run by
// `make measure-aggregated-outage`, not by make test.
//
// The aggregated API's behaviour for users (kubectl get deletions as a
// token, a client-certificate and an unauthorized user, no watches) is
// proven with the whole sink in test/e2e (TestAggregatedAPIOnARealControlPlane).
package aggregated

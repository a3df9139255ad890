// Package controlplane starts a real Kubernetes control plane — etcd,
// kube-apiserver and kube-controller-manager — for end-to-end tests, from the
// binaries that test/cpbuild builds (`make controlplane`), with no container
// runtime.
//
// It owns everything around those processes: free loopback ports, a throwaway
// CA and serving certificate, the service-account signing key, a static token
// file with the users a test asks for plus an admin in system:masters, the
// apiserver's audit flags (policy and webhook kubeconfig), readiness waits,
// per-process log files (whose tails are printed when a test fails) and
// killing every process group at cleanup. AddAPIServer starts more
// kube-apiservers on the same etcd, as a cluster with several runs them
// (each with the first one's flags, and e.g. its own audit log).
//
// It also renders the shipped deploy/audit/webhook-kubeconfig.template.yaml
// (WriteWebhookKubeconfig) and locates the shipped deploy/audit/policy.yaml
// (PolicyFile), so tests exercise the files users deploy.
//
// Typical use:
//
//	kc := controlplane.WriteWebhookKubeconfig(t, controlplane.WebhookKubeconfig{
//		Server: sinkURL, CAData: sinkCA, ClientCertData: cert, ClientKeyData: key})
//	cp := controlplane.Start(t, controlplane.Options{
//		Users:                  []controlplane.User{{Name: "alice", Groups: []string{"dev"}}},
//		AuditPolicyFile:        controlplane.PolicyFile(t),
//		AuditWebhookConfigFile: kc,
//	})
//	alice := kubernetes.NewForConfigOrDie(cp.UserConfig("alice"))
//
// The binaries are found through the OPTIONS_RECORD_CONTROLPLANE_DIR
// environment variable, which hack/make/controlplane.mk sets for the test targets.
package controlplane

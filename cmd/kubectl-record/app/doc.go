// Package app is kubectl-record, the kubectl plugin of Options Record: the
// record's questions as verbs (deletions, history, manifest, restore), asked
// of the aggregated API record.optionsrecord.io through the kube-apiserver
// with the caller's own kubeconfig, so the cluster's RBAC decides every
// answer and every restore runs as the caller.
//
// It follows kubectl's conventions with kubectl's own libraries: cobra and
// pflag, cli-runtime's ConfigFlags (--kubeconfig, --context, -n, --as...),
// its printers for -o, and the discovery RESTMapper for TYPE (short names,
// plurals, group-qualified names). It talks to the record through the typed
// client of api/record/clientset.
//
// This package only wires the command tree (root.go: one line per verb).
// Each verb is a package of cmd/, as kubectl's pkg/cmd/<verb>; what the
// verbs share is in cmdutil (the Factory of flags and clients, errors and
// exit codes, TYPE/NAME, -o, completion) and format (how the record is
// shown on a terminal); the timeline page of the ui verb is package ui.
//
// Exit codes (cmdutil's Exit constants): 0 done; 1 an error; 2 a usage
// error, or a restore not confirmed; 3 refused by RBAC or not
// authenticated; 4 not found, or the record API not installed; 5 a
// restore refused or failed.
package app

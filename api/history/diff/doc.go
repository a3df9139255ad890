// Package diff computes what changed between two states of a Kubernetes
// object, as JSON pointers: the one diff behind both front doors' diff
// fields, the restore's answer and kubectl-record's diff.
//
// Lists are matched by key where the apiserver itself matches them: the
// strategic-merge-patch keys of the built-in types (containers, env and
// volumes by name, ports by containerPort, ...), read from the Go types of
// k8s.io/api. An inserted container is then one add, not a replace of
// every container after it. Lists without a key (and every list of a
// custom resource, whose keys the record does not know) are compared by
// position. The package is pure: no I/O, no clients.
package diff

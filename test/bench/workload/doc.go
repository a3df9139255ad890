// Package workload generates the benchmark's load before anything is timed:
// per connection, pools of audit.k8s.io/v1 EventLists of a Mix (which
// fraction of the events the rules RulesYAML select), serialized once as
// Templates that the load generator stamps with a round and the current
// time, in place, before each send.
//
// It must never time, send or start anything: package main (the bench
// command) does, and TestWorkload checks that what it generates is what
// the bench claims.
package workload

// Package rulesync keeps the rule set current from the OptionsRecordController
// objects of the cluster, with no watch and no informer:
//
//   - Registry holds, per cluster, the newest known copy of each object, fed
//     by the audit events about OptionsRecordControllers (their
//     responseObject is the new object, so a change takes effect within one
//     webhook batch) and replaced by a plain LIST at start-up and on a slow
//     resync, the level-based safety net. It compiles them (with the static
//     --rules-file rules) into immutable filter.Rules swapped atomically.
//   - Syncer does the LIST, writes each object's status through the status
//     subresource from one replica at a time (a Lease), asks for baseline
//     LISTs of the resources a rule begins to cover, and, from the same
//     replica, keeps the observing webhook's ValidatingWebhookConfiguration
//     selecting what the rules select (GET, and UPDATE when it differs).
//
// It never watches, and never lets the sink's own requests feed back into
// the record.
package rulesync

// Package filter decides which kube-apiserver audit events Options Record
// records. It owns the rule language of the OptionsRecordController resource:
// validating objects (Compile, with a Ready status per object), reading them
// from a rules file (Parse, LoadFile), matching events against the compiled
// rule set (Rules.Match), and saying which objects the rules cover
// (Rules.Covers, Rules.CoversResource, WildcardExclusion) for baselines and
// the audit policy; and generating, from the rules, the audit policy
// (AuditPolicy) and the observing webhook's ValidatingWebhookConfiguration
// (AdmissionWebhook).
//
// A Rules value is immutable and safe for concurrent use. The sink compiles
// a new set whenever its OptionsRecordController objects change and swaps a
// pointer; Match never waits on a lock.
//
// What Match drops, in order (each with a DropReason for metrics):
//   - events of stages other than ResponseComplete and Panic;
//   - non-mutating verbs (only create, update, patch, delete and
//     deletecollection are changes);
//   - events without an objectRef;
//   - dry-run requests;
//   - events no Ready rule selects, or that every selecting rule drops as
//     noise (status-only writes, writes that store nothing, high-churn kinds).
//
// Failed and denied requests are kept: "who tried to delete" is a forensic
// question too. Deciding whether a kept event also creates an object version
// is the store's job.
//
// The package must never do I/O (apart from LoadFile reading the file it is
// given), touch the network, log, keep global state, or modify the events it
// is handed: Match reads an event and returns a Decision, nothing more. It
// decodes a request body only when a rule's noise setting needs it.
package filter

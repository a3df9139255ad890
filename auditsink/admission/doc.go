// Package admission owns the observing webhook: the handler the
// kube-apiserver's validating admission posts AdmissionReviews to
// (ValidatingWebhookConfiguration webhook observe.optionsrecord.io, path
// /observe), and the writer that stores what the reviews showed.
//
// For an UPDATE or DELETE, a review carries oldObject: the stored object,
// with its uid and resourceVersion, just before the write. The handler
// turns it into an observation (model.BaselineVersion: sanitized, Secret
// values digested as on every other path), queues it, and answers at once
// with allowed: true and an audit annotation naming it
// (observation-<digest of the uid>: the observation's random id), which
// the apiserver writes into the same request's audit event at every level.
// The store confirms the observation when that authenticated audit event
// arrives (the exact join, store/observations.go); until then it is
// untrusted, and it expires.
//
// It must never block, slow or change a write: it always allows, never
// patches, never waits on PostgreSQL (a bounded queue in memory, written in
// batches; when full, observations are dropped and counted), bounds the
// bodies and requests it holds (a body is read with the audit webhook's
// reader, auditsink.BodyReader, before the review takes a slot), and answers what it cannot read with a 400
// (the apiserver then ignores it: failurePolicy Ignore). It never talks to
// the cluster.
package admission

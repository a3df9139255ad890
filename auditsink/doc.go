// Package auditsink owns the ingest of audit events: the HTTPS webhook
// handler the kube-apiserver posts EventLists to, the authentication of that
// caller (client certificate or bearer token, each mapped to a cluster), the
// decoding of EventLists, and the pipeline that filters events with the rules
// of package filter, turns kept events into rows (prior-state bookkeeping,
// deletecollection explosion, Secret digests) and hands each batch to a
// writer in one call.
//
// It acknowledges a batch only after the writer returned, so nothing
// acknowledged is lost. It never answers a whole batch with a 4xx because of
// one bad event: such events are skipped and counted. It never reads the
// database and never talks to the cluster.
package auditsink

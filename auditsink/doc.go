// Package auditsink owns the ingest of audit events: the HTTPS webhook
// handler the kube-apiserver posts EventLists to, the authentication of that
// caller (client certificate or bearer token, each mapped to a cluster), the
// decoding of EventLists and of audit log files (logfile.go, for
// `options-record import`), and the pipeline that filters events with the rules
// of package filter, turns kept events into rows with package store/model
// (prior-state bookkeeping, deletecollection explosion, Secret digests) and
// hands each batch to a writer in one call.
//
// It acknowledges a batch only after the writer returned, so nothing
// acknowledged is lost. It never answers a whole batch with a 4xx because of
// one bad event: such events are skipped and counted. It never reads the
// database and never talks to the cluster.
//
// # JSON, and which library where
//
// docs/development.md ("JSON") says which decoder the project uses where,
// and why. This package uses:
//
//   - store/model/jsonfast (sonic where it runs natively, else
//     encoding/json; wire.go): each EventList's envelope in one pass, the
//     objects skipped unparsed and kept as slices of the body. The
//     throughput targets of the benchmark (make bench) rest on it.
//   - encoding/json (decode.go): an event decoded on its own, when its
//     batch did not decode in one pass.
//   - the scanner package (see docs/development.md): the members of a
//     large EventList streamed, and members cut in place.
//   - sigs.k8s.io/yaml (auth.go): the token file.
package auditsink

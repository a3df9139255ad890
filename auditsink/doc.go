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
// The project decodes JSON with four libraries and two hand scanners; each
// has one job, and this is the one place that says which:
//
//   - github.com/bytedance/sonic (wire.go, and sonic.Valid in store/model/convert.go):
//     the webhook's envelope. Nine events in ten are dropped by the rules, so
//     the objects are skipped unparsed and stay slices of the body; a kept
//     request body is validated with it before it is stored. The
//     throughput targets of the benchmark (make bench) rest on it.
//   - github.com/goccy/go-json (store/model/convert.go): the few fields of a kept
//     response object the record needs (objectMeta), on the hot path of the
//     all-kept mix; measured faster than encoding/json there.
//   - encoding/json: everything off the hot path, where the standard
//     library's exact semantics matter more than speed: Secret digests
//     (store/model/redact.go), the re-encoding that replaces NUL, invalid UTF-8 and lone
//     surrogates (store/model/pgsafe.go: its decoder turns a lone surrogate into U+FFFD,
//     which the record relies on), the journal's records, baselines, and
//     the answers of the restore API (restoreapi).
//   - k8s.io/apimachinery/pkg/util/json (filter's loading and dry-run checks,
//     the manifests and diffs of packages restore and history): objects as Kubernetes decodes them,
//     integers kept as int64 rather than float64, so a manifest or a rule
//     reads back as it was written.
//   - filter/noise.go's scanner: an allocation-free, strictly validating
//     walk that decides whether a patch touches only status, for every
//     patch event before the rules keep or drop it.
//   - hasLoneSurrogate (store/model/pgsafe.go): a scan for unpaired \uD800-\uDFFF
//     escapes, which PostgreSQL's json accepts and its jsonb refuses; it
//     jumps between backslashes, so it costs little on bodies without any.
//
// A new use takes encoding/json unless a benchmark shows the hot path needs
// more, and says so here.
package auditsink

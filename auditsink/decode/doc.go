// Package decode turns what the kube-apiserver's audit backends write into
// audit events: an EventList body of the webhook, decoded whole
// (EventList) or, when it is longer than a chunk, streamed and cut into
// chunks as it arrives (Stream: at most one chunk and one event held, an
// event longer than the limit kept without its bodies), and an audit log
// file of the log backend (OpenLogFile), for `options-record import`.
//
// A body that is not an audit.k8s.io/v1 EventList is an ErrBadRequest; an
// item that does not decode or is not a valid event is skipped and counted
// by reason, never fatal to the others. The events' strings and objects are
// slices of the body, which must not change while they are in use.
//
// It does no network I/O (test/layering): it reads what it is handed. It
// neither filters nor stores: package auditsink runs what it decodes
// through the pipeline.
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
//   - encoding/json (decode.go, logfile.go): an event decoded on its own,
//     when its batch did not decode in one pass; the values of a log.
//   - the scanner store/model/jsonscan (split.go, stream.go, bigevent.go):
//     the members of a large EventList streamed, and members cut in place.
package decode

// Package firehose is the audit source of EKS clusters: the HTTP endpoint
// destination of Amazon Data Firehose (formerly Kinesis Data Firehose),
// fed by a CloudWatch Logs subscription filter on the cluster's log group
// /aws/eks/<cluster>/cluster, streams kube-apiserver-audit-*.
//
// The request and the answers are those of AWS's "HTTP endpoint delivery
// request and response specifications" (protocol version 1.0): a POST of
// application/json, gzip-compressed when the stream is configured so
// (Content-Encoding: gzip), with the headers X-Amz-Firehose-Request-Id
// (the same on every attempt of a request), X-Amz-Firehose-Access-Key (the
// access key configured on the stream, compared here in constant time) and
// X-Amz-Firehose-Protocol-Version, and the body
//
//	{"requestId": "...", "timestamp": <ms since the epoch>, "records": [{"data": "<base64>"}, ...]}
//
// The endpoint answers 200 with {"requestId": "...", "timestamp": <ms>}
// once every record's events are durable, and any other status with
// {"requestId", "timestamp", "errorMessage"}: Firehose retries the same
// request (same request id) until its retry duration runs out, then backs
// it up to S3. A redelivery stores nothing twice: the event key ignores
// how an event came.
//
// Each record's data is, as CloudWatch Logs writes to a subscription's
// destination, a gzip-compressed JSON message: a DATA_MESSAGE
// {"messageType", "owner", "logGroup", "logStream", "subscriptionFilters",
// "logEvents": [{"id", "timestamp", "message"}]}, whose messages are the
// audit log backend's lines (one audit.k8s.io/v1 Event each), or a
// CONTROL_MESSAGE that CloudWatch Logs sends to check the destination,
// skipped and counted. The lines are decoded by auditsink/decode.Lines, the
// webhook's decoder; a line CloudWatch Logs cut at its 256 KiB limit (not
// JSON, ending in "[Truncated...]") is kept as what it still proves (see
// decode.Lines) and counted, or skipped and counted.
//
// The events are recorded for the cluster the log group names through
// Options.Clusters, or for Options.DefaultCluster. The package serves the
// request under the webhook's bounds (auditsink.Handler.ServeDelivery); it
// never reads the database and never talks to the cluster.
//
// # JSON
//
// The envelopes (the request, the CloudWatch Logs message) are decoded
// with encoding/json, as docs/development.md ("JSON") says for a new use;
// the audit events themselves only by auditsink/decode.
package firehose

// Package eventhubs is the audit source of AKS clusters: a consumer of the
// event hub that the cluster's diagnostic settings send the categories
// kube-audit and kube-audit-admin to, read through Event Hubs' Apache
// Kafka endpoint (<namespace>.servicebus.windows.net:9093, TLS, SASL PLAIN
// with the user "$ConnectionString" and the namespace's or the hub's
// connection string as the password, as Event Hubs documents) with
// github.com/twmb/franz-go.
//
// Each Kafka record is one resource-log document as Azure Monitor exports
// it: {"records": [{"time", "resourceId", "category", "operationName",
// "properties": {"log": "<one audit.k8s.io/v1 Event as a string>",
// "pod", "stream"}}, ...]}. The records of the other categories are
// skipped and counted. The properties.log strings are the audit log
// backend's lines, decoded by auditsink/decode.Lines (the webhook's
// decoder): a cut line is kept as what it still proves or skipped, and a
// body AKS replaced with "skipped-too-big-size-object" is dropped from
// the event, which is marked audit.k8s.io/truncated.
//
// # Checkpoints and replicas
//
// Where each partition was read up to lives in PostgreSQL
// (source_checkpoints, migration 00020), not in a blob store nor in Kafka's
// committed offsets. The records of a poll are processed partition by
// partition: the partition's events go through the pipeline as one batch,
// and its checkpoint (the next offset) is written once Process returned,
// so a checkpoint never runs ahead of what is durable. A crash between the
// two re-reads those records; the event key makes that store nothing
// twice (at-least-once delivery, exactly-once record).
//
// Replicas share the partitions by Kafka group consumption (Event Hubs'
// Kafka endpoint runs the group protocol for a consumer group), not by
// leases in PostgreSQL: the group coordinator already balances
// partitions across members, notices a member that died (session timeout)
// and hands its partitions over, which leases would have to rebuild. When
// a partition is assigned, its offset is read from source_checkpoints
// (AdjustFetchOffsetsFn); the poll blocks rebalances while a batch is
// processed (BlockRebalanceOnPoll), so a partition is handed over between
// batches, its checkpoint written. A checkpoint only moves forward, so a
// replica that commits late cannot move it back.
//
// A batch the store does not take is read again: the consumer rewinds the
// partitions to their first unstored offset and retries with a jittered
// backoff (wait.Backoff).
//
// In the tests, github.com/twmb/franz-go/pkg/kfake, an in-process Kafka,
// stands in for Event Hubs' Kafka endpoint (with SASL PLAIN as Event Hubs
// asks for it); no Event Hubs emulator runs here.
package eventhubs

// Package notify sends the notification outbox: the messages the ingest
// transaction queued for stored changes that a rule's spec.notify routes to
// a destination (store: notification_outbox, notification_messages).
//
// A Sender runs in every ingest replica. It groups the outbox rows of one
// incident (a namespace's deletion and its cascade, one deletecollection,
// a burst by one user within the grouping window) into one message, leases
// messages one destination at a time (FOR UPDATE SKIP LOCKED, then a lease
// that runs out if the replica dies), formats each for its destination
// (Alertmanager's v2 API, a signed JSON webhook, a Slack-compatible
// incoming webhook) and records the outcome: sent, retried later with the
// one backoff (k8s.io/apimachinery wait.Backoff, with jitter), or dropped
// (the destination's rate, from the one limiter, api/authlimit; a
// refusal no retry can change; too old). Delivery is at least once: every
// message carries a key its receiver can deduplicate on.
//
// It never runs on the webhook's path: the webhook only queues rows in its
// transaction, so a slow or failing destination cannot slow it. It never
// sends an object's content (so never a Secret value), and writes every
// recorded string escaped for the destination's format (api/escape).
package notify

// Package pubsub owns the ingest of GKE's Kubernetes audit logs: the
// Pub/Sub push endpoint a push subscription POSTs to, the check of the
// Google-signed OIDC token each push carries, and the conversion of the
// Cloud Logging LogEntry a message holds into the audit.k8s.io/v1 Event the
// apiserver wrote. The endpoint is an auditsink.Delivery, served by the
// webhook's handler (auditsink.Handler.ServeDelivery) as the Firehose
// endpoint is: the same bounds, pipeline (rules, conversion into rows,
// dedupe by event key, durable write) and lag metrics (source "pubsub").
// It answers 200 only after the pipeline stored the push's event; a store
// failure is answered 503, and Pub/Sub pushes the message again (with
// backoff) until it is stored. A message that holds no Kubernetes audit
// event is acknowledged and counted, never refused (it would be pushed
// again forever).
//
// It never reads the database, never talks to the cluster or to Google
// beyond fetching Google's signing keys (VerifierOptions.JWKSURL), and
// never takes a push whose token it did not verify.
//
// # Sources
//
//   - Push delivery: https://cloud.google.com/pubsub/docs/push (the body
//     {"message":{"data","messageId","publishTime","attributes"},
//     "subscription"}, data base64; any status but 102, 200, 201, 202 and
//     204 is a negative acknowledgement, pushed again) and
//     https://cloud.google.com/pubsub/docs/authenticate-push-subscriptions
//     (the Authorization: Bearer token, issuer accounts.google.com or
//     https://accounts.google.com, the audience, the email claim of the
//     push service account).
//   - GKE's entries: https://cloud.google.com/kubernetes-engine/docs/how-to/audit-logging
//     (serviceName k8s.io, methodName io.k8s.<group>.<version>.<resource>.<verb>,
//     resourceName core/v1/namespaces/<ns>/configmaps/<name>, resource type
//     k8s_cluster), the AuditLog reference
//     https://cloud.google.com/logging/docs/reference/audit/auditlog/rest/Shared.Types/AuditLog,
//     and the code of Falco's GKE plugin
//     (github.com/falcosecurity/plugins, plugins/k8saudit-gke/pkg/k8sauditgke/convert.go),
//     which reads the same entries into audit Events: the entry's labels
//     as the event's annotations, insertId as its auditID.
//
// # What the conversion keeps exactly, and what it cannot
//
// Exact: the verb (the methodName's last segment), the object (group,
// version, resource, namespace, name, subresource, from resourceName; the
// methodName tells a namespace's own subresource from a namespaced
// collection), the user GKE names (principalEmail), the user agent, the
// request and response objects where the policy logged them (the Structs
// without GKE's "@type" member; a Struct's numbers are doubles in
// Google's pipeline, so an integer beyond 2^53 may have lost digits before
// it reached us), the response code when the response is a Kubernetes
// Status, and the annotations (the entry's labels, where GKE writes the
// apiserver's audit annotations: authorization.k8s.io/decision and any an
// admission webhook adds, observe.optionsrecord.io/... among them;
// string members of protoPayload.metadata with a "/" in their key too).
//
// Not exact, and said so:
//   - groups and user extras: GKE's entries do not carry them, so the
//     events have none (rules that select by group do not match them);
//   - impersonation (kubectl --as): read from authenticationInfo.authoritySelector
//     ("the authority selector specified by the requestor" in the AuditLog
//     reference), principalEmail being who authenticated; Elastic's
//     detection rule for GKE (github.com/elastic/detection-rules,
//     rules/integrations/gcp/privilege_escalation_gcp_gke_api_request_impersonating_privileged_identity.toml)
//     reads Kubernetes impersonation there too. Only the user: the
//     impersonated groups are not in the entry;
//   - IAM delegation (authenticationInfo.serviceAccountDelegationInfo: a
//     Google service account's credential obtained by other principals,
//     which the apiserver does not see): the user stays principalEmail, the
//     service account the apiserver authenticated, with or without a
//     selector, so one credential's requests are one user's; the chain,
//     originator first as the AuditLog reference orders it, is the
//     event's DelegationAnnotation (each principal's email or
//     principalSubject, made printable and bounded; one of that key in the
//     entry's labels is dropped);
//   - source IPs: one (requestMetadata.callerIp), not the apiserver's list;
//   - the request URI: rebuilt from resourceName (a create's without its
//     name, as it is posted to its collection), without the query string;
//   - times: GKE gives one, the entry's timestamp, taken as both the
//     request's and the stage's; the stage is ResponseComplete;
//   - the response code otherwise: from google.rpc.Status (0 is 200, or
//     201 for a create; other codes as Google's APIs map them to HTTP), so
//     a 422 may read as 400: success and failure stay apart, which is
//     what the record needs;
//   - the auditID: GKE's entries do not carry the apiserver's; the event's
//     is operation.id (documented as the insertId's value), else insertId.
//     Both are the same on every redelivery of the entry, so a redelivery
//     has the same event key and adds nothing. A request logged as two
//     entries (never seen for ResponseComplete) would be two events.
//   - the level: RequestResponse when the entry carries bodies, Metadata
//     otherwise (GKE's policy logs ConfigMaps and Secrets at Metadata:
//     their states come from admission observations, joined by the
//     annotation, not from these entries).
package pubsub

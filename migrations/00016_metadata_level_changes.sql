-- deletions: state_unknown says plainly that the record does not know the
-- deleted object's last state. A create, update, patch or delete the audit
-- policy logs at Metadata (EKS's and GKE's policies for ConfigMaps, Secrets
-- and custom resources) carries no bodies: it is now recorded as a change
-- with no state (object NULL, complete false), and its deletion is listed
-- here with the state an earlier version of the object gave (by uid and
-- resourceVersion, as before), or state_unknown. Where the event names no
-- uid, the version's uid is 'unknown-' and a digest of the event: an object
-- of its own, with no earlier version.

-- +goose Up
CREATE OR REPLACE VIEW deletions AS
SELECT
    h.*,
    COALESCE(ns.username, own.username) AS initiated_by,
    COALESCE(ns.audit_id, own.audit_id) AS initiated_by_audit_id,
    COALESCE(ns.stage_at, own.changed_at) AS initiated_at,
    CASE WHEN ns.username IS NOT NULL THEN 'namespace-deletion'
         WHEN own.username IS NOT NULL THEN 'owner-deletion' END AS initiated_via,
    -- The object whose deletion started the cascade: a reader is told who
    -- started it only where they may read that object too.
    CASE WHEN ns.username IS NOT NULL THEN '' ELSE own.api_group END AS initiated_api_group,
    CASE WHEN ns.username IS NOT NULL THEN 'namespaces' ELSE own.resource END AS initiated_resource,
    CASE WHEN ns.username IS NOT NULL THEN '' ELSE own.namespace END AS initiated_namespace,
    CASE WHEN ns.username IS NOT NULL THEN h.namespace ELSE own.name END AS initiated_name,
    -- Nothing recorded gives the state before the delete: the policy logged
    -- it at Metadata (no bodies) and no earlier version of the object is kept.
    NOT h.prior_known AS state_unknown
FROM object_history h
LEFT JOIN cascade_actors ca ON ca.username = h.username
-- The namespace controller empties a namespace after a user deleted it.
LEFT JOIN LATERAL (
    SELECT e.username, e.audit_id, e.stage_at
    FROM events e
    WHERE ca.controller IN ('namespace', 'both')
      AND h.namespace <> ''
      AND e.cluster = h.cluster AND e.api_group = '' AND e.resource = 'namespaces'
      AND e.name = h.namespace AND e.verb = 'delete' AND e.response_code < 300
      AND e.stage_at <= h.changed_at
      -- An object created after that deletion lives in a namespace made
      -- again under the same name: that deletion did not empty it.
      AND e.stage_at >= coalesce(k8s_time(h.prior_object -> 'metadata' ->> 'creationTimestamp'), '-infinity')
      AND e.username NOT IN (SELECT username FROM cascade_actors)
    ORDER BY e.stage_at DESC
    LIMIT 1
) ns ON true
-- The garbage collector deletes dependents after a user deleted their owner.
LEFT JOIN LATERAL (
    SELECT oe.username, oe.audit_id, ov.changed_at, ov.api_group, ov.resource, ov.namespace, ov.name
    FROM json_array_elements(COALESCE(h.prior_object -> 'metadata' -> 'ownerReferences', '[]'::json)) AS o(ref)
    JOIN object_versions ov
      ON ov.cluster = h.cluster AND ov.uid = o.ref ->> 'uid' AND ov.origin = 'change'
     AND ov.verb IN ('delete', 'deletecollection')
     -- An owner lives in its dependent's namespace (or is cluster-scoped)
     -- and is the object the reference names: a reference to the uid of an
     -- object elsewhere (which the garbage collector answers by deleting
     -- the dependent) does not make its deleter the cascade's author.
     AND ov.namespace IN (h.namespace, '')
     -- (a delete answered by a Status records no kind)
     AND ov.name = o.ref ->> 'name' AND ov.kind IN (o.ref ->> 'kind', '')
    JOIN events oe
      ON oe.cluster = ov.cluster AND oe.event_key = ov.event_key AND oe.stage_at = ov.changed_at
    WHERE ca.controller IN ('garbage-collector', 'both')
      AND ns.username IS NULL
      AND oe.response_code < 300
      AND ov.changed_at <= h.changed_at
    ORDER BY ov.changed_at DESC
    LIMIT 1
) own ON true
WHERE h.verb IN ('delete', 'deletecollection') AND h.response_code < 300;


-- +goose Down
DROP VIEW deletions;
CREATE VIEW deletions AS
SELECT
    h.*,
    COALESCE(ns.username, own.username) AS initiated_by,
    COALESCE(ns.audit_id, own.audit_id) AS initiated_by_audit_id,
    COALESCE(ns.stage_at, own.changed_at) AS initiated_at,
    CASE WHEN ns.username IS NOT NULL THEN 'namespace-deletion'
         WHEN own.username IS NOT NULL THEN 'owner-deletion' END AS initiated_via,
    -- The object whose deletion started the cascade: a reader is told who
    -- started it only where they may read that object too.
    CASE WHEN ns.username IS NOT NULL THEN '' ELSE own.api_group END AS initiated_api_group,
    CASE WHEN ns.username IS NOT NULL THEN 'namespaces' ELSE own.resource END AS initiated_resource,
    CASE WHEN ns.username IS NOT NULL THEN '' ELSE own.namespace END AS initiated_namespace,
    CASE WHEN ns.username IS NOT NULL THEN h.namespace ELSE own.name END AS initiated_name
FROM object_history h
LEFT JOIN cascade_actors ca ON ca.username = h.username
-- The namespace controller empties a namespace after a user deleted it.
LEFT JOIN LATERAL (
    SELECT e.username, e.audit_id, e.stage_at
    FROM events e
    WHERE ca.controller IN ('namespace', 'both')
      AND h.namespace <> ''
      AND e.cluster = h.cluster AND e.api_group = '' AND e.resource = 'namespaces'
      AND e.name = h.namespace AND e.verb = 'delete' AND e.response_code < 300
      AND e.stage_at <= h.changed_at
      -- An object created after that deletion lives in a namespace made
      -- again under the same name: that deletion did not empty it.
      AND e.stage_at >= coalesce(k8s_time(h.prior_object -> 'metadata' ->> 'creationTimestamp'), '-infinity')
      AND e.username NOT IN (SELECT username FROM cascade_actors)
    ORDER BY e.stage_at DESC
    LIMIT 1
) ns ON true
-- The garbage collector deletes dependents after a user deleted their owner.
LEFT JOIN LATERAL (
    SELECT oe.username, oe.audit_id, ov.changed_at, ov.api_group, ov.resource, ov.namespace, ov.name
    FROM json_array_elements(COALESCE(h.prior_object -> 'metadata' -> 'ownerReferences', '[]'::json)) AS o(ref)
    JOIN object_versions ov
      ON ov.cluster = h.cluster AND ov.uid = o.ref ->> 'uid' AND ov.origin = 'change'
     AND ov.verb IN ('delete', 'deletecollection')
     -- An owner lives in its dependent's namespace (or is cluster-scoped)
     -- and is the object the reference names: a reference to the uid of an
     -- object elsewhere (which the garbage collector answers by deleting
     -- the dependent) does not make its deleter the cascade's author.
     AND ov.namespace IN (h.namespace, '')
     -- (a delete answered by a Status records no kind)
     AND ov.name = o.ref ->> 'name' AND ov.kind IN (o.ref ->> 'kind', '')
    JOIN events oe
      ON oe.cluster = ov.cluster AND oe.event_key = ov.event_key AND oe.stage_at = ov.changed_at
    WHERE ca.controller IN ('garbage-collector', 'both')
      AND ns.username IS NULL
      AND oe.response_code < 300
      AND ov.changed_at <= h.changed_at
    ORDER BY ov.changed_at DESC
    LIMIT 1
) own ON true
WHERE h.verb IN ('delete', 'deletecollection') AND h.response_code < 300;

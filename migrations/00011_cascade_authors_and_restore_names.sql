-- deletions: who started a cascade is told with the object whose deletion
-- started it (initiated_api_group, _resource, _namespace, _name), so that
-- the API tells it only to readers of that object too; and an owner is
-- matched in its dependent's namespace (or the cluster scope), by name and
-- kind as well as uid. Before, anyone who could create an object could name
-- the uid of an object of another namespace as its owner: the garbage
-- collector deletes such a dependent, and the view credited the owner's
-- deleter with it, telling who deleted an object the reader cannot see.
--
-- restores: a restore or plan created as an object (the aggregated API) is
-- named within its creator's own names. Only its creator reads it back;
-- with names shared by every user, creating one told whether another user
-- had taken that name, and let a user take names before others.

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

DROP INDEX restores_object_name;
CREATE UNIQUE INDEX restores_object_name ON restores (cluster, username, coalesce(user_uid, ''), object_namespace, object_name)
    WHERE object_name IS NOT NULL AND NOT dry_run;

-- +goose Down
DROP INDEX restores_object_name;
CREATE UNIQUE INDEX restores_object_name ON restores (cluster, object_namespace, object_name)
    WHERE object_name IS NOT NULL AND NOT dry_run;
DROP VIEW deletions;
CREATE VIEW deletions AS
SELECT
    h.*,
    COALESCE(ns.username, own.username) AS initiated_by,
    COALESCE(ns.audit_id, own.audit_id) AS initiated_by_audit_id,
    COALESCE(ns.stage_at, own.changed_at) AS initiated_at,
    CASE WHEN ns.username IS NOT NULL THEN 'namespace-deletion'
         WHEN own.username IS NOT NULL THEN 'owner-deletion' END AS initiated_via
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
    SELECT oe.username, oe.audit_id, ov.changed_at
    FROM json_array_elements(COALESCE(h.prior_object -> 'metadata' -> 'ownerReferences', '[]'::json)) AS o(ref)
    JOIN object_versions ov
      ON ov.cluster = h.cluster AND ov.uid = o.ref ->> 'uid' AND ov.origin = 'change'
     AND ov.verb IN ('delete', 'deletecollection')
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


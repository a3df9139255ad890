-- The record: audit events, object versions and the forensic views over them.
-- Every key starts with the cluster so one database can serve a fleet, and every
-- table is distributable by (cluster, object uid) or (cluster, event) for Citus.

-- +goose Up

-- events: one row per kept audit event (ResponseComplete or Panic stage).
-- Partitioned by day on stage_at; retention drops whole partitions.
CREATE TABLE events (
    cluster             text        NOT NULL,
    event_key           bytea       NOT NULL,  -- SHA-256 of the event's identity (not the auditID alone)
    stage_at            timestamptz NOT NULL,  -- stageTimestamp
    received_at         timestamptz,           -- requestReceivedTimestamp
    audit_id            text        NOT NULL,  -- client-settable (Audit-ID header): not unique
    stage               text        NOT NULL,
    verb                text        NOT NULL,
    request_uri         text        NOT NULL,
    username            text        NOT NULL,  -- the authenticated caller
    user_uid            text,
    user_groups         text[]      NOT NULL DEFAULT '{}',
    user_extra          jsonb,
    impersonated_user   text,                  -- the identity the caller acted as, if impersonating
    impersonated_groups text[],
    source_ips          text[]      NOT NULL DEFAULT '{}',  -- client-influenced (X-Forwarded-For)
    user_agent          text,                  -- client-influenced
    api_group           text        NOT NULL DEFAULT '',
    api_version         text        NOT NULL DEFAULT '',
    resource            text        NOT NULL DEFAULT '',
    subresource         text        NOT NULL DEFAULT '',
    namespace           text        NOT NULL DEFAULT '',
    name                text        NOT NULL DEFAULT '',
    object_uid          text,
    response_code       integer     NOT NULL,
    response_reason     text,
    response_message    text,
    request_object      json        COMPRESSION lz4,  -- kept when it says more than the response (patches, DeleteOptions, failures)
    annotations         jsonb,
    rules               text[]      NOT NULL DEFAULT '{}',  -- the OptionsRecordControllers that selected the event
    secret_digested     boolean     NOT NULL DEFAULT false,
    ingested_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster, event_key, stage_at)
) PARTITION BY RANGE (stage_at);

-- "What did user U do between T1 and T2."
CREATE INDEX events_user_time ON events (cluster, username, stage_at);
-- "Who tried to change X" and cascade attribution (the namespace deletion behind a cascade).
CREATE INDEX events_object_time ON events (cluster, api_group, resource, name, stage_at);
-- "Failed and denied mutations."
CREATE INDEX events_failed_time ON events (cluster, stage_at) WHERE response_code >= 300;

-- object_versions: the states of objects. One row per object changed by a kept
-- event (a deletecollection gives one row per deleted object) and one per
-- baseline observation. The prior state of a change is not stored: it is the
-- newest older version of the same object, derived in the views, so
-- out-of-order arrival and several sink replicas still give the right answer.
CREATE TABLE object_versions (
    cluster          text        NOT NULL,
    uid              text        NOT NULL,   -- metadata.uid of the object
    version_key      bytea       NOT NULL,   -- SHA-256 of (event_key, uid) or of the baseline observation
    resource_version bigint,                 -- metadata.resourceVersion after the change; NULL when unknown (a delete answered by a Status)
    origin           text        NOT NULL CHECK (origin IN ('change', 'baseline')),
    verb             text        NOT NULL,   -- create, update, patch, delete, deletecollection, or baseline
    changed_at       timestamptz NOT NULL,   -- stageTimestamp of the event (observation time for a baseline)
    event_key        bytea,                  -- the event (NULL for a baseline)
    api_group        text        NOT NULL DEFAULT '',
    api_version      text        NOT NULL DEFAULT '',
    kind             text        NOT NULL DEFAULT '',
    resource         text        NOT NULL,
    subresource      text        NOT NULL DEFAULT '',
    namespace        text        NOT NULL DEFAULT '',
    name             text        NOT NULL,
    created          boolean     NOT NULL DEFAULT false,  -- this change created the object
    deleted          boolean     NOT NULL DEFAULT false,  -- the object is gone after this change
    complete         boolean     NOT NULL,   -- object holds the full state (false: e.g. a /scale write)
    -- The state after the change (for a delete: the last state, when the
    -- response had it), as the apiserver sent it. json, not jsonb: the
    -- exact text is kept and PostgreSQL only validates it, which costs a
    -- third of building jsonb on the write path (measured); -> and ->> work
    -- alike, and object::jsonb gives jsonb's operators when a query needs them.
    object           json        COMPRESSION lz4,
    secret_digested  boolean     NOT NULL DEFAULT false,
    rules            text[]      NOT NULL DEFAULT '{}',
    PRIMARY KEY (cluster, uid, version_key)
);

-- Prior-state lookup and the history of one incarnation.
CREATE INDEX object_versions_uid_rv ON object_versions (cluster, uid, resource_version);
-- History of an object by name, across incarnations; its prefix (cluster,
-- namespace) also serves the state of a namespace as of a time.
CREATE INDEX object_versions_name_time ON object_versions (cluster, namespace, api_group, resource, name, changed_at);
-- Join from events (what did user U change).
CREATE INDEX object_versions_event ON object_versions (cluster, event_key);
-- Who deleted what, when.
CREATE INDEX object_versions_deletes_time ON object_versions (cluster, changed_at)
    WHERE verb IN ('delete', 'deletecollection');

-- The users the namespace controller and garbage collector act as: deletions by
-- them are attributed to the user action that started the cascade.
CREATE TABLE cascade_actors (
    username   text PRIMARY KEY,
    controller text NOT NULL CHECK (controller IN ('namespace', 'garbage-collector', 'both'))
);
INSERT INTO cascade_actors VALUES
    ('system:kube-controller-manager', 'both'),
    ('system:serviceaccount:kube-system:namespace-controller', 'namespace'),
    ('system:serviceaccount:kube-system:generic-garbage-collector', 'garbage-collector');

-- object_history: one row per recorded change, with the actor and the prior state.
CREATE VIEW object_history AS
SELECT
    v.cluster,
    v.changed_at,
    e.audit_id,
    v.verb,
    e.username,
    e.user_groups,
    e.impersonated_user,
    e.impersonated_groups,
    e.source_ips,
    e.user_agent,
    v.api_group,
    v.api_version,
    v.kind,
    v.resource,
    v.subresource,
    v.namespace,
    v.name,
    v.uid,
    v.resource_version,
    e.response_code,
    (v.created OR (v.deleted AND v.object IS NOT NULL) OR p.uid IS NOT NULL) AS prior_known,
    CASE WHEN v.created THEN NULL
         WHEN v.deleted AND v.object IS NOT NULL THEN v.object
         ELSE p.object END AS prior_object,
    CASE WHEN v.created THEN NULL
         WHEN v.deleted AND v.object IS NOT NULL THEN v.resource_version
         ELSE p.resource_version END AS prior_resource_version,
    -- A write through a subresource (such as /scale) changed the object after
    -- the prior version without recording its full state.
    EXISTS (
        SELECT 1 FROM object_versions s
        WHERE s.cluster = v.cluster AND s.uid = v.uid AND NOT s.complete AND NOT s.deleted
          AND s.resource_version > p.resource_version
          AND (v.resource_version IS NULL OR s.resource_version < v.resource_version)
    ) AS prior_stale,
    CASE WHEN v.deleted THEN NULL ELSE v.object END AS object,
    v.complete AS object_complete,
    v.created,
    v.deleted,
    v.rules,
    v.secret_digested,
    e.request_object,
    e.request_uri,
    v.event_key
FROM object_versions v
JOIN events e
  ON e.cluster = v.cluster AND e.event_key = v.event_key AND e.stage_at = v.changed_at
LEFT JOIN LATERAL (
    SELECT pv.uid, pv.object, pv.resource_version
    FROM object_versions pv
    WHERE pv.cluster = v.cluster
      AND pv.uid = v.uid
      AND pv.complete
      AND NOT pv.deleted
      AND pv.version_key <> v.version_key
      AND NOT v.created
      AND (v.resource_version IS NULL
           OR pv.resource_version < v.resource_version
           OR (v.deleted AND pv.resource_version = v.resource_version))
    ORDER BY pv.resource_version DESC NULLS LAST, pv.changed_at DESC
    LIMIT 1
) p ON true
WHERE v.origin = 'change';

-- deletions: successful deletes, one row per deleted object, with the user
-- action that started a cascade where the record shows it.
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

-- failed_mutations: mutations the apiserver refused or that failed (code >= 300).
-- "Who tried to delete X" is a forensic question too.
CREATE VIEW failed_mutations AS
SELECT
    e.cluster,
    e.stage_at AS changed_at,
    e.audit_id,
    e.verb,
    e.username,
    e.user_groups,
    e.impersonated_user,
    e.impersonated_groups,
    e.source_ips,
    e.user_agent,
    e.api_group,
    e.api_version,
    e.resource,
    e.subresource,
    e.namespace,
    e.name,
    e.object_uid AS uid,
    e.response_code,
    e.response_reason,
    e.response_message,
    e.request_object,
    e.request_uri,
    e.rules
FROM events e
WHERE e.response_code >= 300;

-- objects_as_of: the state of the objects of one namespace ('' for cluster-scoped
-- objects) as of a time: the newest recorded version of each object that
-- existed then.
CREATE FUNCTION objects_as_of(p_cluster text, p_namespace text, p_at timestamptz)
RETURNS TABLE (
    api_group text, api_version text, kind text, resource text, namespace text, name text,
    uid text, resource_version bigint, changed_at timestamptz, stale boolean, object json
)
LANGUAGE sql STABLE AS $$
    SELECT s.api_group, s.api_version, s.kind, s.resource, s.namespace, s.name,
           s.uid, s.resource_version, s.changed_at,
           EXISTS (SELECT 1 FROM object_versions x
                   WHERE x.cluster = s.cluster AND x.uid = s.uid AND NOT x.complete AND NOT x.deleted
                     AND x.resource_version > s.resource_version AND x.changed_at <= p_at) AS stale,
           s.object
    FROM (
        SELECT DISTINCT ON (v.uid) v.*
        FROM object_versions v
        WHERE v.cluster = p_cluster AND v.namespace = p_namespace AND v.changed_at <= p_at
          AND (v.complete OR v.deleted)
        ORDER BY v.uid, v.resource_version DESC NULLS FIRST, v.deleted DESC, v.changed_at DESC
    ) s
    WHERE NOT s.deleted
$$;

-- +goose Down
DROP FUNCTION objects_as_of(text, text, timestamptz);
DROP VIEW failed_mutations;
DROP VIEW deletions;
DROP VIEW object_history;
DROP TABLE cascade_actors;
DROP TABLE object_versions;
DROP TABLE events;

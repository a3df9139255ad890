-- object_history (and so deletions): a change recorded under an unknown-
-- uid (a write the audit policy logged at Metadata, whose event named no
-- uid) that a confirmed admission observation named since is superseded.
-- Confirmation no longer rewrites that row's uid in place (an UPDATE of a
-- row the tamper-evident log may hold): it stores the same event's change
-- again under the observed object's uid (version_key sha256(event_key,
-- uid), as the event's own version of it would be) and the views show that
-- row alone. The superseded row stays in object_versions, readable by its
-- key.

-- +goose Up
CREATE OR REPLACE VIEW object_history AS
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
WHERE v.origin = 'change'
  -- A no-op write reports the resourceVersion of the change before it; when
  -- its batch was stored first, both are stored: the earliest is the change.
  AND (v.deleted OR v.resource_version IS NULL OR NOT EXISTS (
      SELECT 1 FROM object_versions d
      WHERE d.cluster = v.cluster AND d.uid = v.uid AND d.resource_version = v.resource_version
        AND d.origin = 'change' AND NOT d.deleted
        AND (d.changed_at, d.version_key) < (v.changed_at, v.version_key)))
  -- A change recorded under an unknown- uid that a confirmed admission
  -- observation named since is superseded by the same event's change of
  -- the object's uid, stored beside it: the row is kept as it was stored
  -- (and logged), and this one shown alone.
  AND (v.uid NOT LIKE 'unknown-%' OR NOT EXISTS (
      SELECT 1 FROM object_versions r
      WHERE r.cluster = v.cluster AND r.event_key = v.event_key AND r.changed_at = v.changed_at
        AND r.origin = 'change' AND r.uid NOT LIKE 'unknown-%'));

-- +goose Down
CREATE OR REPLACE VIEW object_history AS
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
WHERE v.origin = 'change'
  -- A no-op write reports the resourceVersion of the change before it; when
  -- its batch was stored first, both are stored: the earliest is the change.
  AND (v.deleted OR v.resource_version IS NULL OR NOT EXISTS (
      SELECT 1 FROM object_versions d
      WHERE d.cluster = v.cluster AND d.uid = v.uid AND d.resource_version = v.resource_version
        AND d.origin = 'change' AND NOT d.deleted
        AND (d.changed_at, d.version_key) < (v.changed_at, v.version_key)));

-- deletions: a namespace deletion is the start of a cascade only for the
-- objects that existed when it happened. Before, a controller's delete in a
-- namespace deleted and made again under the same name was attributed to
-- whoever deleted the old namespace.

-- +goose Up
-- +goose StatementBegin
-- k8s_time reads an RFC 3339 time as the apiserver writes it; NULL for
-- anything else (an imported log can hold any text), so one odd value cannot
-- fail a query of the view.
CREATE FUNCTION k8s_time(v text) RETURNS timestamptz
LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
    IF v !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$' THEN
        RETURN NULL;
    END IF;
    RETURN v::timestamptz;
EXCEPTION WHEN OTHERS THEN
    RETURN NULL; -- e.g. month 13
END
$$;
-- +goose StatementEnd

CREATE OR REPLACE VIEW deletions AS
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

-- +goose Down
CREATE OR REPLACE VIEW deletions AS
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
DROP FUNCTION k8s_time(text);

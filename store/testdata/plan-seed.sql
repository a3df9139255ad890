-- Rows for the planner: the plan tests EXPLAIN the API's and the README's
-- queries against tables of a realistic shape, ANALYZEd, because an empty
-- table gives every index the same cost and the planner's pick says nothing.
-- 40,000 events over the day of 2026-11-21 in two clusters; one object
-- version per event over 4,000 objects (10 versions each) in 40 namespaces;
-- 20 users; 5% deletes, 3% failed, 2% baselines.
INSERT INTO events (cluster, event_key, stage_at, audit_id, stage, verb, request_uri, username,
                    api_group, api_version, resource, namespace, name, object_uid, response_code)
SELECT CASE WHEN i % 2 = 0 THEN 'c' ELSE 'default' END,
       sha256(('e' || i)::bytea),
       timestamptz '2026-11-21 00:00Z' + i * interval '2 seconds',
       'audit-' || i, 'ResponseComplete',
       CASE WHEN i % 20 = 0 THEN 'delete' WHEN i % 3 = 0 THEN 'patch' ELSE 'update' END,
       '/api/v1/namespaces/ns' || (i % 40) || '/configmaps/n' || (i % 4000),
       CASE WHEN i % 20 = 1 THEN 'bob' ELSE 'user' || (i % 20) END,
       '', 'v1', 'configmaps', 'ns' || (i % 40), 'n' || (i % 4000), 'u' || (i % 4000),
       CASE WHEN i % 33 = 0 THEN 409 ELSE 200 END
FROM generate_series(1, 40000) AS i;

INSERT INTO object_versions (cluster, uid, version_key, resource_version, origin, verb, changed_at, event_key,
                             api_version, kind, resource, namespace, name, deleted, complete, object)
SELECT e.cluster, e.object_uid, sha256(e.event_key || e.object_uid::bytea), 1000 + i,
       CASE WHEN i % 50 = 0 THEN 'baseline' ELSE 'change' END,
       CASE WHEN i % 50 = 0 THEN 'baseline' ELSE e.verb END,
       e.stage_at, CASE WHEN i % 50 = 0 THEN NULL ELSE e.event_key END,
       'v1', 'ConfigMap', e.resource, e.namespace, e.name, e.verb = 'delete', true,
       json_build_object('metadata', json_build_object('name', e.name, 'namespace', e.namespace))
FROM events e, LATERAL (SELECT substr(e.audit_id, 7)::int AS i) n
WHERE e.response_code < 300;

ANALYZE events;
ANALYZE object_versions;

-- The objects of namespace prod as they were at a point in time.
SELECT resource, name, resource_version, changed_at, stale, object
FROM objects_as_of('default', 'prod', '2026-11-21 10:07:00Z')
ORDER BY resource, name;

-- The history of one object by name, across incarnations (uid changes on re-create).
SELECT changed_at, verb, username, uid, resource_version, prior_object, object
FROM object_history
WHERE cluster = 'default' AND api_group = '' AND resource = 'configmaps'
  AND namespace = 'prod' AND name = 'app-config'
ORDER BY changed_at;

-- Everything user bob changed between two times.
SELECT changed_at, verb, resource, namespace, name, prior_object, object
FROM object_history
WHERE cluster = 'default' AND username = 'bob'
  AND changed_at BETWEEN '2026-11-21 00:00Z' AND '2026-11-22 00:00Z'
ORDER BY changed_at;

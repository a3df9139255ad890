-- Who deleted what in a namespace over the last day, and who started each cascade.
SELECT changed_at, username, impersonated_user, resource, namespace, name,
       initiated_by, initiated_via, prior_object
FROM deletions
WHERE cluster = 'default' AND namespace = 'prod' AND changed_at > now() - interval '1 day'
ORDER BY changed_at DESC;

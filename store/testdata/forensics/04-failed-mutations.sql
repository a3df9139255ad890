-- Denied or failed mutations of the last hour.
SELECT changed_at, username, verb, resource, namespace, name, response_code, response_message
FROM failed_mutations
WHERE cluster = 'default' AND changed_at > now() - interval '1 hour'
ORDER BY changed_at DESC;

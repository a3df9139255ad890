-- Who tried to delete the Secret prod/db-password, successfully or not.
SELECT stage_at, username, impersonated_user, response_code, response_reason, source_ips, user_agent
FROM events
WHERE cluster = 'default' AND api_group = '' AND resource = 'secrets' AND name = 'db-password'
  AND namespace = 'prod' AND verb = 'delete'
ORDER BY stage_at;

#!/usr/bin/env bash
# make demo: start the sink on the embedded PostgreSQL, replay a sample audit
# log through its HTTPS webhook, and ask the record who deleted what.
set -euo pipefail
cd "$(dirname "$0")/.."

DATA=${DEMO_DATA_DIR:-.options-record/demo}
WEBHOOK=${DEMO_WEBHOOK_ADDR:-127.0.0.1:18443}
METRICS=${DEMO_METRICS_ADDR:-127.0.0.1:19090}
mkdir -p "$DATA"
# The sample log has fixed dates: --webhook-max-event-age takes them however
# old they are (by default the sink skips events older than the rules keep).

bin/options-record serve --data-dir "$DATA" --rules-file deploy/samples/record-prod.yaml \
  --webhook-bind-address "$WEBHOOK" --metrics-bind-address "$METRICS" --log-level warn \
  --webhook-max-event-age 87600h \
  2>"$DATA/serve.log" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT

for _ in $(seq 1 150); do
  if curl -fsS "http://$METRICS/readyz" >/dev/null 2>&1; then break; fi
  if ! kill -0 $pid 2>/dev/null; then echo "serve exited:"; cat "$DATA/serve.log"; exit 1; fi
  sleep 0.2
done
curl -fsS "http://$METRICS/readyz" >/dev/null || { echo "serve did not become ready:"; cat "$DATA/serve.log"; exit 1; }

echo "== replaying test/fixtures/demo-audit.jsonl through https://$WEBHOOK/audit"
bin/audit-replay --url "https://$WEBHOOK/audit" --ca "$DATA/tls/ca.crt" --token-file "$DATA/webhook-token" \
  test/fixtures/demo-audit.jsonl

echo
echo "== who deleted what (SELECT ... FROM deletions)"
bin/options-record sql --data-dir "$DATA" "
SELECT to_char(changed_at, 'YYYY-MM-DD HH24:MI:SS') AS deleted_at, username AS deleted_by, impersonated_user AS acting_as,
       resource, namespace, name, initiated_by, initiated_via,
       prior_object->'data' AS data_before
FROM deletions ORDER BY changed_at"

echo
echo "== who tried and failed (SELECT ... FROM failed_mutations)"
bin/options-record sql --data-dir "$DATA" "
SELECT to_char(changed_at, 'YYYY-MM-DD HH24:MI:SS') AS at, username, verb, resource, namespace, name, response_code
FROM failed_mutations ORDER BY changed_at"

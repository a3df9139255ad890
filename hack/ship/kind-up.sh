#!/usr/bin/env bash
# Bring up the kind cluster of kind-config/cluster.yaml with Options Record in
# it, and show a recorded deletion. Run by `make kind-up`, which first writes
# kind-config/credentials/ and builds the image.
#
# Environment: KIND (command, e.g. "kind" or "go run sigs.k8s.io/kind@v0.32.0"),
# KUBECTL, KIND_CLUSTER, IMAGE.
set -euo pipefail
cd "$(dirname "$0")/../.."

KIND=${KIND:-kind}
KUBECTL=${KUBECTL:-kubectl}
KIND_CLUSTER=${KIND_CLUSTER:-options-record}
IMAGE=${IMAGE:-options-record:dev}
NS=options-record

step() { printf '\n==> %s\n' "$*"; }
kind() { $KIND "$@"; }          # word-splits "go run ..." on purpose
k() { $KUBECTL --context "kind-$KIND_CLUSTER" "$@"; }

if [ ! -f deploy/components/postgres/credentials/database.env ]; then
	echo "deploy/components/postgres/credentials/ is missing: run 'make postgres-credentials' (make kind-up does)" >&2
	exit 1
fi
if [ ! -f kind-config/credentials/audit-webhook.kubeconfig ]; then
	echo "kind-config/credentials/ is missing: run 'make kind-credentials' (make kind-up does)" >&2
	exit 1
fi

# 1. The cluster. Its apiserver reads the audit policy and the webhook
#    kubeconfig mounted from this repository (paths relative to the root).
if kind get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER"; then
	step "kind cluster $KIND_CLUSTER exists"
else
	step "creating kind cluster $KIND_CLUSTER"
	kind create cluster --name "$KIND_CLUSTER" --config kind-config/cluster.yaml --wait 180s
fi

# 2. The image, loaded into the node (imagePullPolicy IfNotPresent).
step "loading $IMAGE into kind"
kind load docker-image "$IMAGE" --name "$KIND_CLUSTER"

# 3. Everything: CRD, namespace, RBAC, PostgreSQL, Secrets, the sink with the
#    webhook Service on the clusterIP the apiserver's kubeconfig names. Then
#    the sample rules, once the CRD is served.
step "applying kind-config/ (deploy/ + PostgreSQL + kind credentials)"
k apply -k kind-config/
k wait --for condition=established --timeout 60s crd/optionsrecordcontrollers.optionsrecord.io
k apply -f deploy/samples/record-prod.yaml
# Pods are replaced when the image changes under the same tag.
k -n "$NS" rollout restart statefulset/options-record deployment/options-record-api >/dev/null
k -n "$NS" rollout status statefulset/options-record-postgres --timeout 300s
k -n "$NS" rollout status statefulset/options-record --timeout 300s
k -n "$NS" rollout status deployment/options-record-api --timeout 300s

# 4. A deletion to record: prod is covered by the sample rule "prod".
step "creating, changing and deleting prod/app-config"
k create namespace prod --dry-run=client -o yaml | k apply -f -
k -n prod delete configmap app-config --ignore-not-found
k -n prod create configmap app-config --from-literal=LOG_LEVEL=info
k -n prod patch configmap app-config --type merge -p '{"data":{"LOG_LEVEL":"debug"}}'
k -n prod delete configmap app-config

step "who deleted prod/app-config (the apiserver sends a batch within 5 s)"
query="SELECT changed_at, username, resource, namespace, name, prior_object->'data' AS data_before
FROM deletions WHERE cluster = 'default' AND namespace = 'prod' AND name = 'app-config'
ORDER BY changed_at DESC LIMIT 3"
for _ in $(seq 1 30); do
	if out=$(k -n "$NS" exec statefulset/options-record -- /options-record sql "$query" 2>&1) && grep -q app-config <<<"$out"; then
		echo "$out"
		printf '\nMore: kubectl --context kind-%s -n %s exec statefulset/options-record -- /options-record sql "SELECT ..."\n' "$KIND_CLUSTER" "$NS"
		exit 0
	fi
	sleep 2
done
echo "$out" >&2
echo "no deletion recorded after 60 s; see: kubectl --context kind-$KIND_CLUSTER -n $NS logs statefulset/options-record" >&2
exit 1

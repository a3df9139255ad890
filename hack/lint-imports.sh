#!/usr/bin/env bash
# lint-imports.sh — fail on an import that runs against the project's layers
# (run by `make lint`). Non-test imports only: tests may reach anything.
#
# The layers, bottom up (a package imports only from layers below it, and
# never another service of its own layer):
#
#   model     store (+ migrations), record, api/v1alpha1 and api/record/v1alpha1
#             (the API types)
#   engine    filter: a pure rule engine (no store, no database driver, no
#             clientset, no HTTP)
#   services  auditsink (ingest), journal, rulesync; history (the reads of
#             the record, no HTTP, no cluster client) and restore (manifests,
#             restores and plans as the caller, no HTTP) below restoreapi
#             (their HTTP front door) and aggregated (their front door
#             through the kube-apiserver)
#   wiring    internal/app, imported only by the mains
#   mains     cmd/*
#
# ALLOWED says which packages of the module each package may import; a
# package missing from it fails the check, so a new package states its place.
set -euo pipefail
cd "$(dirname "$0")/.."
mod=github.com/options-record/options-record

declare -A ALLOWED=(
	[./api/v1alpha1]=""
	[./api/record/v1alpha1]=""
	[./migrations]=""
	[./store]="./migrations"
	[./record]="./store"
	[./filter]="./api/v1alpha1"
	[./auditsink]="./filter ./record ./store"
	[./journal]="./store"
	[./rulesync]="./api/v1alpha1 ./filter ./record ./store"
	[./history]="./store"
	[./manifest]="./history"
	[./impersonate]="./history ./manifest"
	[./restore]="./history ./impersonate ./manifest ./record ./store"
	[./restoreapi]="./history ./restore"
	[./aggregated/openapi]="./api/record/v1alpha1"
	[./aggregated]="./aggregated/openapi ./api/record/v1alpha1 ./history ./restore"
	[./internal/certs]=""
	[./internal/pgembed]=""
	[./internal/pgtest]="./internal/pgembed"
	[./internal/app]="./aggregated ./api/v1alpha1 ./auditsink ./filter ./history ./internal/certs ./internal/pgembed ./journal ./record ./restore ./restoreapi ./rulesync ./store"
	[./cmd/options-record]="./internal/app"
	[./cmd/audit-replay]=""
)
# Imports of other modules that a package must not use.
declare -A FORBIDDEN=(
	[./filter]="github.com/jackc/ k8s.io/client-go/ net/http"
	[./record]="github.com/jackc/ k8s.io/client-go/ net/http"
	[./history]="net/http github.com/go-chi/ k8s.io/client-go/"
	[./manifest]="net/http github.com/go-chi/ k8s.io/client-go/ github.com/jackc/"
	[./restore]="net/http github.com/go-chi/"
	[./store]="k8s.io/client-go/ net/http"
)

bad=()
while read -r from imports; do
	case "$from" in ./test/* | ./hack/*) continue ;; esac # test tooling may reach anything
	if [[ -z "${ALLOWED[$from]+set}" ]]; then
		bad+=("$from: not in hack/lint-imports.sh's ALLOWED table: give the new package its place in the layers")
		continue
	fi
	for to in $imports; do
		if [[ "$to" == ./* ]]; then
			[[ " ${ALLOWED[$from]} " == *" $to "* ]] || bad+=("$from -> $to: not allowed (allowed: ${ALLOWED[$from]:-none})")
		elif [[ -n "${FORBIDDEN[$from]+set}" ]]; then
			for f in ${FORBIDDEN[$from]}; do
				[[ "$to" == "$f"* ]] && bad+=("$from -> $to: $from must not use $f")
			done
		fi
	done
done < <(go list -f '{{.ImportPath}}{{range .Imports}} {{.}}{{end}}' ./... | sed "s|${mod}|.|g")

if ((${#bad[@]})); then
	printf 'import layering:\n' >&2
	printf '  %s\n' "${bad[@]}" >&2
	exit 1
fi

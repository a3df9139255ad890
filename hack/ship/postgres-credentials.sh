#!/usr/bin/env bash
# Write the passwords of the demo PostgreSQL (deploy/components/postgres) into
# the git-ignored env files its secretGenerators read, once: random ones per
# checkout, never ones published in the repository. Run by
# `make postgres-credentials` (and `make kind-up`); kustomize cannot generate
# random values, so `kubectl apply -k` of an overlay with the component
# fails until these files exist.
#
# Three logins (roles.sql): the superuser, which only the init script uses;
# options_record, the ingest role, which owns the record; options_record_api,
# the restore API's role, which reads the record and owns the restores.
set -euo pipefail
dir=${1:-"$(dirname "$0")/../../deploy/components/postgres/credentials"}
if [ -f "$dir/postgres.env" ] && [ -f "$dir/database.env" ] && [ -f "$dir/database-api.env" ]; then
	echo "postgres-credentials: $dir is up to date (delete it, and the demo database's PVC, to make new passwords)"
	exit 0
fi
if [ -f "$dir/postgres.env" ]; then
	echo "postgres-credentials: $dir predates the separate database roles of ingest and the API:" >&2
	echo "  delete it and the demo database (its PVC data-options-record-postgres-0), then run this again" >&2
	exit 1
fi
umask 077
mkdir -p "$dir"
pw() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
superuser=$(pw) ingest=$(pw) api=$(pw)
printf 'password=%s\ningest-password=%s\napi-password=%s\n' "$superuser" "$ingest" "$api" >"$dir/postgres.env"
# In the namespace, to the demo server, which has no TLS; a remote database
# takes sslmode=verify-full (deploy/README.md).
printf 'url=postgres://options_record:%s@options-record-postgres:5432/options_record?sslmode=disable\n' "$ingest" >"$dir/database.env"
printf 'url=postgres://options_record_api:%s@options-record-postgres:5432/options_record?sslmode=disable\n' "$api" >"$dir/database-api.env"
echo "postgres-credentials: wrote $dir"

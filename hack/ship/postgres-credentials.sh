#!/usr/bin/env bash
# Write the passwords of the demo PostgreSQL (deploy/components/postgres) into
# the git-ignored env files its secretGenerators read, once: random ones per
# checkout, never ones published in the repository. Run by
# `make postgres-credentials` (and `make kind-up`); kustomize cannot generate
# random values, so `kubectl apply -k` of an overlay with the component
# fails until these files exist.
#
# Four logins (roles.sql): the superuser, which only the init script uses;
# options_record, the ingest role, which owns the record;
# options_record_reader, which reads it for the restore API; and
# options_record_api, the restore API's role, which owns the restores and
# reads nothing of the record. The API's Secret holds both of its logins.
set -euo pipefail
dir=${1:-"$(dirname "$0")/../../deploy/components/postgres/credentials"}
if [ -f "$dir/postgres.env" ] && [ -f "$dir/database.env" ] && grep -q '^reader-url=' "$dir/database-api.env" 2>/dev/null; then
	echo "postgres-credentials: $dir is up to date (delete it, and the demo database's PVC, to make new passwords)"
	exit 0
fi
if [ -f "$dir/postgres.env" ]; then
	echo "postgres-credentials: $dir predates the database roles of ingest, the record's reader and the API:" >&2
	echo "  delete it and the demo database (its PVC data-options-record-postgres-0), then run this again" >&2
	exit 1
fi
umask 077
mkdir -p "$dir"
pw() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
superuser=$(pw) ingest=$(pw) reader=$(pw) api=$(pw)
printf 'password=%s\ningest-password=%s\nreader-password=%s\napi-password=%s\n' "$superuser" "$ingest" "$reader" "$api" >"$dir/postgres.env"
# In the namespace, to the demo server, which has no TLS; a remote database
# takes sslmode=verify-full (deploy/README.md).
printf 'url=postgres://options_record:%s@options-record-postgres:5432/options_record?sslmode=disable\n' "$ingest" >"$dir/database.env"
{
	printf 'url=postgres://options_record_api:%s@options-record-postgres:5432/options_record?sslmode=disable\n' "$api"
	printf 'reader-url=postgres://options_record_reader:%s@options-record-postgres:5432/options_record?sslmode=disable\n' "$reader"
} >"$dir/database-api.env"
echo "postgres-credentials: wrote $dir"

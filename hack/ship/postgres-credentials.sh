#!/usr/bin/env bash
# Write the password of the demo PostgreSQL (deploy/components/postgres) into
# the git-ignored env files its secretGenerator reads, once: a random one per
# checkout, never one published in the repository. Run by
# `make postgres-credentials` (and `make kind-up`); kustomize cannot generate
# random values, so `kubectl apply -k` of an overlay with the component
# fails until these files exist.
set -euo pipefail
dir=${1:-"$(dirname "$0")/../../deploy/components/postgres/credentials"}
if [ -f "$dir/postgres.env" ] && [ -f "$dir/database.env" ]; then
	echo "postgres-credentials: $dir is up to date (delete it to make a new password; the database keeps the old one)"
	exit 0
fi
umask 077
mkdir -p "$dir"
password=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf 'password=%s\n' "$password" >"$dir/postgres.env"
# In the namespace, to the demo server, which has no TLS; a remote database
# takes sslmode=verify-full (deploy/README.md).
printf 'url=postgres://options-record:%s@options-record-postgres:5432/options_record?sslmode=disable\n' "$password" >"$dir/database.env"
echo "postgres-credentials: wrote $dir"

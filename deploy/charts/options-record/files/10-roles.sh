#!/bin/sh
# Run once by the postgres image at initdb (/docker-entrypoint-initdb.d), as
# the superuser it creates: the record's roles (roles.sql), with the
# passwords of the options-record-postgres Secret. The sink's workloads log
# in as those roles, never as the superuser.
set -eu
roles_sql=${OPTIONS_RECORD_ROLES_SQL:-/options-record/roles.sql}
ingest=${OPTIONS_RECORD_INGEST_ROLE:-options_record}
reader=${OPTIONS_RECORD_READER_ROLE:-options_record_reader}
api=${OPTIONS_RECORD_API_ROLE:-options_record_api}
psql -X -v ON_ERROR_STOP=1 -v ingest="$ingest" -v reader="$reader" -v api="$api" -d "$POSTGRES_DB" -f "$roles_sql"
psql -X -q -v ON_ERROR_STOP=1 -v ingest="$ingest" -v reader="$reader" -v api="$api" \
	-v ingest_password="$INGEST_PASSWORD" -v reader_password="$READER_PASSWORD" -v api_password="$API_PASSWORD" \
	-d "$POSTGRES_DB" <<'SQL'
ALTER ROLE :"ingest" PASSWORD :'ingest_password';
ALTER ROLE :"reader" PASSWORD :'reader_password';
ALTER ROLE :"api" PASSWORD :'api_password';
SQL

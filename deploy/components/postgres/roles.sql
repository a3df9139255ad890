-- The two database roles of Options Record, one per workload.
--
--   ingest (default options_record) owns the record: it applies the
--     record's migrations, creates and drops the daily partitions of events,
--     and writes events and versions. It has no privilege on the API's
--     schema: a stolen ingest credential cannot plant or alter a restore or
--     plan that the API would execute as its owner.
--   api (default options_record_api) reads the record and owns the schema
--     options_record_api, where it keeps the restores and plans it executes
--     (its own migrations, applied by the API at start-up). It cannot write
--     the record: a stolen API credential cannot rewrite history.
--
-- Run it once in the record's database, as a superuser or a role that may
-- create roles and is a member of the ingest role (managed PostgreSQL: the
-- admin login); it is safe to run again (an upgrade of a single-role
-- install: keep the existing owner as the ingest role):
--
--   psql -v ON_ERROR_STOP=1 -v ingest=options_record -v api=options_record_api \
--        -d 'postgres://admin@db.example/options_record?sslmode=verify-full' -f roles.sql
--
-- then give each role a password (\password options_record_api) and each
-- workload its own Secret (deploy/README.md). Neither role may be a
-- superuser, nor a member of the other: a superuser passes every check.
-- The demo PostgreSQL of this component runs it at initdb (10-roles.sh).

SELECT NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'ingest') AS new_ingest,
       NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'api') AS new_api,
       NOT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'options_record_api') AS new_schema \gset
\if :new_ingest
CREATE ROLE :"ingest" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;
\endif
\if :new_api
CREATE ROLE :"api" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;
\endif

-- The record: ingest creates its tables, views and functions in public.
GRANT USAGE, CREATE ON SCHEMA public TO :"ingest";

-- The API reads every table and view ingest has made or will make (the
-- partitions of events are read through events).
GRANT USAGE ON SCHEMA public TO :"api";
GRANT SELECT ON ALL TABLES IN SCHEMA public TO :"api";
ALTER DEFAULT PRIVILEGES FOR ROLE :"ingest" IN SCHEMA public GRANT SELECT ON TABLES TO :"api";

-- The API's own schema. Nobody else gets any privilege on it.
\if :new_schema
CREATE SCHEMA options_record_api AUTHORIZATION :"api";
\else
-- A single-role install made it as its one role: hand it, and what is in
-- it, to the API's role.
ALTER SCHEMA options_record_api OWNER TO :"api";
SELECT format('ALTER TABLE options_record_api.%I OWNER TO %I', tablename, :'api')
FROM pg_tables WHERE schemaname = 'options_record_api' \gexec
\endif
REVOKE ALL ON SCHEMA options_record_api FROM PUBLIC;

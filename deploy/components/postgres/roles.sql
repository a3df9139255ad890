-- The database roles of Options Record: one per workload, and the restore
-- API's two logins.
--
--   ingest (default options_record) owns the record: it applies the
--     record's migrations, creates and drops the daily partitions of events,
--     and writes events and versions. It has no privilege on the API's
--     schema: a stolen ingest credential cannot plant or alter a restore or
--     plan that the API would execute.
--   reader (default options_record_reader) reads the record, for the
--     restore API's queries (and any other reader of the record: grant it
--     to them). It writes nothing, and has no privilege on the API's schema.
--     Its sessions run with row_security off, so a row-security policy that
--     the record's owner put on a table makes its reads an error, never
--     filters or rewrites them.
--   api (default options_record_api) owns the schema options_record_api,
--     where the restore API keeps the restores and plans it executes (its
--     own migrations, applied by the API at start-up). It reads nothing of
--     the record: PostgreSQL runs a table's row-security policies, the
--     functions a view calls and a view itself with the rights of the role
--     that reads them, so the role that may write the plans never reads
--     what ingest owns. It cannot write the record either: a stolen API
--     credential cannot rewrite history.
--
-- Run it once in the record's database, as a superuser or a role that may
-- create roles and is a member of the ingest role (managed PostgreSQL: the
-- admin login); it is safe to run again (an upgrade of a single-role
-- install: keep the existing owner as the ingest role; an upgrade of a
-- two-role install: it adds the reader and takes the record away from the
-- API's role):
--
--   psql -v ON_ERROR_STOP=1 -v ingest=options_record -v reader=options_record_reader \
--        -v api=options_record_api \
--        -d 'postgres://admin@db.example/options_record?sslmode=verify-full' -f roles.sql
--
-- then give each role a password (\password options_record_reader) and the
-- workloads their Secrets (deploy/README.md). No role may be a superuser,
-- nor a member of another: a superuser passes every check.
-- The demo PostgreSQL of this component runs it at initdb (10-roles.sh).

SELECT NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'ingest') AS new_ingest,
       NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'reader') AS new_reader,
       NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'api') AS new_api,
       NOT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'options_record_api') AS new_schema \gset
\if :new_ingest
CREATE ROLE :"ingest" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;
\endif
\if :new_reader
CREATE ROLE :"reader" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;
\endif
\if :new_api
CREATE ROLE :"api" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;
\endif

-- The record: ingest alone creates tables, views and functions in public.
-- PostgreSQL 14 and older let every role create there (PUBLIC holds
-- CREATE): another role could then make a table under the name of a day's
-- partition of events before ingest does.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE, CREATE ON SCHEMA public TO :"ingest";

-- The reader reads every table and view ingest has made or will make (the
-- partitions of events are read through events). Nobody else but those
-- granted a role may even name what is in public.
REVOKE USAGE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO :"reader";
GRANT SELECT ON ALL TABLES IN SCHEMA public TO :"reader";
ALTER DEFAULT PRIVILEGES FOR ROLE :"ingest" IN SCHEMA public GRANT SELECT ON TABLES TO :"reader";
-- Unconfirmed admission observations and the notifications' work queue
-- are not part of the record (migrations 00017 and 00019 take them back
-- from the reader): not even when this runs again after them. (Each
-- revoked only once its migration made it: an older install may have the
-- one and not yet the other.)
SELECT to_regclass('public.observations') IS NOT NULL AS has_observations,
       to_regclass('public.notification_outbox') IS NOT NULL AS has_notifications \gset
\if :has_observations
REVOKE ALL ON public.observations, public.observation_claims FROM :"reader";
\endif
\if :has_notifications
REVOKE ALL ON public.notification_outbox, public.notification_messages FROM :"reader";
\endif
ALTER ROLE :"reader" SET row_security = off;

-- The API's role reads nothing of the record (an older roles.sql let it).
ALTER DEFAULT PRIVILEGES FOR ROLE :"ingest" IN SCHEMA public REVOKE ALL ON TABLES FROM :"api";
REVOKE ALL ON ALL TABLES IN SCHEMA public FROM :"api";
REVOKE ALL ON SCHEMA public FROM :"api";
ALTER ROLE :"api" SET search_path = options_record_api;
ALTER ROLE :"api" SET row_security = off;

-- The API's own schema. Nobody else gets any privilege on it.
\if :new_schema
CREATE SCHEMA options_record_api AUTHORIZATION :"api";
\else
-- A single-role install made it as its one role: hand it, and what is in
-- it, to the API's role. The API's migrations make no trigger, rule or
-- row-security policy there: one found is refused (an administrator looks
-- at it and drops it), never handed over. The API refuses at start-up a
-- schema with anything in it another role owns (store.APIStore.Prepare).
DO $$
DECLARE planted text;
BEGIN
    SELECT string_agg(what, '; ') INTO planted FROM (
        SELECT format('trigger %I on %s', g.tgname, g.tgrelid::regclass) AS what
        FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'options_record_api' AND NOT g.tgisinternal
        UNION ALL SELECT format('rule %I on %s', w.rulename, w.ev_class::regclass)
        FROM pg_rewrite w JOIN pg_class c ON c.oid = w.ev_class JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'options_record_api' AND w.rulename <> '_RETURN'
        UNION ALL SELECT format('policy %I on %s', y.polname, y.polrelid::regclass)
        FROM pg_policy y JOIN pg_class c ON c.oid = y.polrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'options_record_api') p;
    IF planted IS NOT NULL THEN
        RAISE EXCEPTION 'options_record_api holds what the API''s migrations never make: %', planted
            USING HINT = 'Look at each, drop it (DROP TRIGGER / DROP RULE / DROP POLICY ... ON ...), then run roles.sql again.';
    END IF;
END $$;
ALTER SCHEMA options_record_api OWNER TO :"api";
-- Tables, partitioned tables, views, materialized views, foreign tables,
-- standalone sequences (a sequence a table owns follows its table).
SELECT format('ALTER TABLE %s OWNER TO %I', c.oid::regclass, :'api')
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'options_record_api' AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
                  AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')) \gexec
-- Functions, procedures and aggregates.
SELECT format('ALTER ROUTINE %s OWNER TO %I', p.oid::regprocedure, :'api')
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'options_record_api' \gexec
-- Types of their own (a table's row type and an array type follow theirs).
SELECT format('ALTER %s %s OWNER TO %I', CASE t.typtype WHEN 'd' THEN 'DOMAIN' ELSE 'TYPE' END, t.oid::regtype, :'api')
FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
WHERE n.nspname = 'options_record_api' AND t.typtype IN ('b', 'c', 'd', 'e', 'r')
  AND (t.typrelid = 0 OR (SELECT relkind FROM pg_class WHERE oid = t.typrelid) = 'c')
  AND NOT (t.typelem <> 0 AND t.typlen = -1 AND t.typcategory = 'A') \gexec
\endif
REVOKE ALL ON SCHEMA options_record_api FROM PUBLIC;

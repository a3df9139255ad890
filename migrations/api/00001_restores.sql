-- The restore API's own table, in the schema options_record_api, owned by
-- the API's database role: restores and plans, who made them, what they
-- reviewed and what happened to each step. The ingest role, which owns and
-- writes the record, has no privilege on this schema, so a stolen ingest
-- credential cannot plant or alter a plan that the API would execute as
-- its owner (deploy/components/postgres/roles.sql ships the grants).
--
-- These migrations are the API's (goose table
-- options_record_api.goose_db_version), applied by the restore API at
-- start-up; the record's own migrations are the ingest role's.
--
-- Before this migration set the restores lived in public.restores, a table
-- the ingest role owns. When this migration runs, the API copies its rows
-- here, read through the record's reader (store.APIStore.Prepare): no
-- statement run as this schema's owner reads anything the ingest role
-- owns, whose policies, functions and views would run with the owner's
-- rights. (This file read public.restores itself until then; installs
-- that ran it before are unchanged.) The old table is left as it was
-- (nothing reads it any more) for the operator to drop (docs/upgrading.md).

-- +goose Up
CREATE TABLE options_record_api.restores (
    cluster          text        NOT NULL,
    id               uuid        NOT NULL DEFAULT gen_random_uuid(),
    kind             text        NOT NULL CHECK (kind IN ('version', 'as-of', 'undo')),
    created_at       timestamptz NOT NULL DEFAULT now(),
    username         text        NOT NULL,   -- the authenticated caller (TokenReview)
    user_uid         text,
    user_groups      text[]      NOT NULL DEFAULT '{}',
    user_extra       jsonb,
    request          jsonb       NOT NULL,   -- what was asked: version, namespace and time, user and range, options
    plan             jsonb       NOT NULL,   -- the steps, as the caller reviewed them
    dry_run          boolean     NOT NULL DEFAULT false,
    state            text        NOT NULL CHECK (state IN ('planned', 'running', 'succeeded', 'partial', 'failed', 'refused')),
    executed_at      timestamptz,
    finished_at      timestamptz,
    outcome          jsonb,                  -- one result per step: done, failed (with the apiserver's answer), skipped
    plan_id          uuid,                   -- for a dry run of a stored plan: that plan
    object_namespace text,                   -- a restore created as an object (kubectl): its namespace and name
    object_name      text,
    PRIMARY KEY (cluster, id)
);

-- "What did operator U restore, and when."
CREATE INDEX restores_user_time ON options_record_api.restores (cluster, username, created_at);
-- Retention, and the newest restores of a cluster.
CREATE INDEX restores_time ON options_record_api.restores (cluster, created_at);
-- A name is each creator's own, taken by a restore that ran (not a dry run).
CREATE UNIQUE INDEX restores_object_name ON options_record_api.restores
    (cluster, username, coalesce(user_uid, ''), object_namespace, object_name)
    WHERE object_name IS NOT NULL AND NOT dry_run;

-- The copy of public.restores is pending until the API has made it
-- (store.APIStore.Prepare deletes this row in the transaction that copies):
-- a first start cut off between this migration and the copy makes it at
-- the next start, and only once, so rows written into public.restores
-- later are never taken. Installs that ran this file when it copied in SQL
-- have no such table: nothing is pending there.
CREATE TABLE options_record_api.old_restores_pending (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton)
);
INSERT INTO options_record_api.old_restores_pending DEFAULT VALUES;

-- +goose Down
DROP TABLE options_record_api.old_restores_pending;
DROP TABLE options_record_api.restores;

-- Restores through the restore API: who restored what, the plan they reviewed
-- and what happened to each step. A restore of one version is a plan of one
-- step. Rows are never deleted by the sink: they are the record of what the
-- API wrote to the cluster (the cluster's own audit log names the same
-- operator, since restores impersonate the caller).
--
-- Also an index for the API's search of recorded changes over a whole cluster
-- by time (the other searches are served by the indexes of 00001).

-- +goose Up
CREATE TABLE restores (
    cluster       text        NOT NULL,
    id            uuid        NOT NULL DEFAULT gen_random_uuid(),
    kind          text        NOT NULL CHECK (kind IN ('version', 'as-of', 'undo')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    username      text        NOT NULL,   -- the authenticated caller (TokenReview)
    user_uid      text,
    user_groups   text[]      NOT NULL DEFAULT '{}',
    user_extra    jsonb,
    request       jsonb       NOT NULL,   -- what was asked: version, namespace and time, user and range, options
    plan          jsonb       NOT NULL,   -- the steps, as the caller reviewed them
    dry_run       boolean     NOT NULL DEFAULT false,
    state         text        NOT NULL CHECK (state IN ('planned', 'running', 'succeeded', 'partial', 'failed', 'refused')),
    executed_at   timestamptz,
    finished_at   timestamptz,
    outcome       jsonb,                  -- one result per step: done, failed (with the apiserver's answer), skipped
    plan_id       uuid,                   -- for a dry run of a stored plan: that plan
    PRIMARY KEY (cluster, id)
);

-- "What did operator U restore, and when."
CREATE INDEX restores_user_time ON restores (cluster, username, created_at);
CREATE INDEX restores_time ON restores (cluster, created_at);

-- The API's search of recorded changes without a narrower filter.
CREATE INDEX object_versions_time ON object_versions (cluster, changed_at);

-- +goose Down
DROP INDEX object_versions_time;
DROP TABLE restores;

-- Observations from admission: the state an object held just before a
-- write, as the apiserver's validating admission review showed it
-- (oldObject), and the audit events that name them.
--
-- An observation is untrusted when it arrives: on managed clusters the
-- apiserver presents no credential to webhooks, so anyone who reaches the
-- endpoint can post one. It enters the record (object_versions, so the views,
-- the APIs and the restores) only when an authenticated audit event of the
-- same request carries its annotation (observe.optionsrecord.io/observation-*:
-- its id) and names the same object with a matching verb: the exact join.
-- Unconfirmed observations expire after a few minutes and are bounded in
-- bytes per source. Both tables are the ingest role's alone: no reader is
-- granted them (an unconfirmed observation is not part of the record).

-- +goose Up
-- NOT VALID: every row stored holds the old, narrower check already; a
-- validation would scan object_versions under this migration's lock.
ALTER TABLE object_versions DROP CONSTRAINT object_versions_origin_check;
ALTER TABLE object_versions ADD CONSTRAINT object_versions_origin_check
    CHECK (origin IN ('change', 'baseline', 'admission')) NOT VALID;

-- observations: unconfirmed admission observations.
CREATE TABLE observations (
    cluster          text        NOT NULL,
    observation_id   text        NOT NULL,   -- the id the reviewer answered with (32 hex digits, random)
    received_at      timestamptz NOT NULL,
    source           text        NOT NULL,   -- the remote address of the review (host)
    bytes            integer     NOT NULL,   -- what the row holds, counted against the source's bound
    operation        text        NOT NULL CHECK (operation IN ('UPDATE', 'DELETE')),
    dry_run          boolean     NOT NULL,
    -- The request as the review named it; the audit event must name the same.
    api_group        text        NOT NULL DEFAULT '',
    resource         text        NOT NULL,
    subresource      text        NOT NULL DEFAULT '',
    namespace        text        NOT NULL DEFAULT '',
    name             text        NOT NULL DEFAULT '',
    -- The observed object (oldObject), sanitized and digested as every
    -- version is: it becomes the version at its own resourceVersion.
    uid              text        NOT NULL,
    resource_version bigint      NOT NULL,
    version_key      bytea       NOT NULL,
    api_version      text        NOT NULL DEFAULT '',
    kind             text        NOT NULL DEFAULT '',
    object_namespace text        NOT NULL DEFAULT '',
    object_name      text        NOT NULL,
    complete         boolean     NOT NULL,
    object           json        NOT NULL,
    object_exact     json,
    secret_digested  boolean     NOT NULL DEFAULT false,
    PRIMARY KEY (cluster, observation_id)
);
CREATE INDEX observations_received ON observations (received_at);
CREATE INDEX observations_source ON observations (source);

-- observation_claims: the annotations of stored audit events that name an
-- observation, kept until the observation arrives (the audit event can be
-- stored first: admission writes through a queue) or expires.
CREATE TABLE observation_claims (
    cluster          text        NOT NULL,
    observation_id   text        NOT NULL,
    event_key        bytea       NOT NULL,
    stage_at         timestamptz NOT NULL,
    verb             text        NOT NULL,
    api_group        text        NOT NULL DEFAULT '',
    resource         text        NOT NULL,
    subresource      text        NOT NULL DEFAULT '',
    namespace        text        NOT NULL DEFAULT '',
    name             text        NOT NULL DEFAULT '',
    object_uid       text,
    claimed_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster, observation_id, event_key)
);
CREATE INDEX observation_claims_claimed ON observation_claims (claimed_at);

-- Only the owner (the ingest role, which applies these migrations) reads
-- or writes them: the reader's default privileges are taken back here.
REVOKE ALL ON observations, observation_claims FROM PUBLIC;
-- +goose StatementBegin
DO $$
DECLARE g record;
BEGIN
    FOR g IN SELECT DISTINCT grantee, table_name FROM information_schema.role_table_grants
             WHERE table_schema = current_schema()
               AND table_name IN ('observations', 'observation_claims')
               AND grantee <> current_user
    LOOP
        EXECUTE format('REVOKE ALL ON %I FROM %I', g.table_name, g.grantee);
    END LOOP;
END $$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE observation_claims;
DROP TABLE observations;
DELETE FROM object_versions WHERE origin = 'admission';
ALTER TABLE object_versions DROP CONSTRAINT object_versions_origin_check;
ALTER TABLE object_versions ADD CONSTRAINT object_versions_origin_check
    CHECK (origin IN ('change', 'baseline'));

-- Notifications: an outbox of the stored changes that a rule's spec.notify
-- route sends to a destination, and the messages the sender made of them.
--
-- The ingest batch transaction inserts one notification_outbox row per
-- stored version and destination, so a row exists iff its change is
-- durable; a redelivered batch stores no version and inserts no row (and the
-- key, the version's, would refuse it anyway). The sender (any ingest
-- replica) groups the rows of one incident into one notification_messages
-- row, leases it (FOR UPDATE SKIP LOCKED, then lease_until), sends it, and
-- records the outcome. Only the ingest role reads or writes these tables:
-- they are the sink's work queue, not part of the forensic record.

-- +goose Up
CREATE TABLE notification_outbox (
    cluster           text        NOT NULL,
    uid               text        NOT NULL,
    version_key       bytea       NOT NULL,   -- object_versions' key: (cluster, uid, version_key)
    destination       text        NOT NULL,   -- a destination of --notify-config
    rule              text        NOT NULL,   -- "namespace/name" of the rule whose route matched
    -- The incident the change belongs to, which the sender makes one
    -- message of: 'namespace:<ns>' (a namespace's deletion and the namespace
    -- controller's cascade in it), 'collection:<event key hex>' (one
    -- deletecollection), 'user:<username>' (a burst by one user),
    -- 'refused:<username>' (one user's refused attempts).
    group_key         text        NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    changed_at        timestamptz NOT NULL,
    verb              text        NOT NULL,
    api_group         text        NOT NULL,
    api_version       text        NOT NULL,
    kind              text        NOT NULL,
    resource          text        NOT NULL,
    subresource       text        NOT NULL,
    namespace         text        NOT NULL,
    name              text        NOT NULL,
    deleted           boolean     NOT NULL,
    audit_id          text        NOT NULL,
    username          text        NOT NULL,
    impersonated_user text,
    source_ips        text[]      NOT NULL,
    user_agent        text,
    -- A refused attempt (its event's response_code >= 300), sent by a route
    -- with refused: true; its row is keyed by the event's key (version_key).
    refused           boolean     NOT NULL DEFAULT false,
    response_code     integer     NOT NULL,
    message_id        text,                   -- set when the sender grouped it
    PRIMARY KEY (cluster, uid, version_key, destination)
);
CREATE INDEX notification_outbox_pending ON notification_outbox (created_at) WHERE message_id IS NULL;
CREATE INDEX notification_outbox_group ON notification_outbox (destination, cluster, group_key) WHERE message_id IS NULL;
CREATE INDEX notification_outbox_message ON notification_outbox (message_id) WHERE message_id IS NOT NULL;

CREATE TABLE notification_messages (
    id              text        PRIMARY KEY,  -- the key a receiver deduplicates on
    destination     text        NOT NULL,
    cluster         text        NOT NULL,
    group_key       text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    lease_until     timestamptz,              -- a sender is sending it until then
    sent_at         timestamptz,
    dropped_at      timestamptz,
    dropped_reason  text,                     -- 'rate_limited', 'rejected', 'expired'
    last_error      text
);
CREATE INDEX notification_messages_due ON notification_messages (next_attempt_at)
    WHERE sent_at IS NULL AND dropped_at IS NULL;
CREATE INDEX notification_messages_done ON notification_messages (created_at)
    WHERE sent_at IS NOT NULL OR dropped_at IS NOT NULL;

-- The reader role gets SELECT on every table the ingest role makes (default
-- privileges, deploy/components/postgres/roles.sql); the work queue is not
-- the record: take it back from everyone but its owner.
-- +goose StatementBegin
DO $$
DECLARE g record;
BEGIN
    FOR g IN SELECT DISTINCT grantee, table_name FROM information_schema.role_table_grants
             WHERE table_schema = current_schema()
               AND table_name IN ('notification_outbox', 'notification_messages')
               AND grantee <> current_user
    LOOP
        IF g.grantee = 'PUBLIC' THEN
            EXECUTE format('REVOKE ALL ON %I FROM PUBLIC', g.table_name);
        ELSE
            EXECUTE format('REVOKE ALL ON %I FROM %I', g.table_name, g.grantee);
        END IF;
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE notification_messages;
DROP TABLE notification_outbox;

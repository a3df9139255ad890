-- The OptionsRecordController objects the sink has seen in audit events,
-- shared by its replicas through the database. The apiserver posts each batch
-- to one replica only, so the replica that sees a rule's change writes it
-- here and notifies the others (NOTIFY options_record_rules); they apply it
-- at once. A sink that starts loads them, so it also knows the rules of the
-- clusters of a fleet it cannot LIST. Deletions stay as tombstones (a uid is
-- never reused), so a late copy of an older event cannot bring a rule back.

-- +goose Up
CREATE TABLE rule_objects (
    cluster          text        NOT NULL,
    uid              text        NOT NULL,
    resource_version bigint      NOT NULL DEFAULT 0,
    deleted          boolean     NOT NULL DEFAULT false,
    object           jsonb,                 -- the OptionsRecordController; NULL once deleted
    observed_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster, uid)
);

-- +goose Down
DROP TABLE rule_objects;

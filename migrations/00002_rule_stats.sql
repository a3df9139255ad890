-- Per-rule counters for OptionsRecordController status (recordedEvents,
-- lastRecordedTime). Each sink replica adds its own counts every few seconds
-- in one short transaction, so batches never contend on these rows.

-- +goose Up
CREATE TABLE rule_stats (
    cluster          text        NOT NULL,
    rule             text        NOT NULL,  -- namespace/name of the OptionsRecordController
    recorded_events  bigint      NOT NULL DEFAULT 0,
    last_recorded_at timestamptz,
    PRIMARY KEY (cluster, rule)
);

-- +goose Down
DROP TABLE rule_stats;

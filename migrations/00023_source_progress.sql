-- source_progress: how far each audit source has delivered, per cluster:
-- the newest event stored from it (its stageTimestamp) and when the ingest
-- last stored a delivery of it. The ingest role writes a row after the
-- events it counts are stored, at most every 30 seconds per (cluster,
-- source), and never moves a time back (a replica that writes late cannot
-- undo a newer one). The APIs read it to tell a caller how late a source
-- is (docs/sql.md, docs/managed-clusters.md "Lag"): a change younger than
-- the newest event may not have arrived yet. The reader role may read it
-- (roles.sql grants it every table ingest makes); it holds no object data.

-- +goose Up
CREATE TABLE source_progress (
    cluster         text        NOT NULL,
    source          text        NOT NULL,
    newest_event_at timestamptz NOT NULL,
    delivered_at    timestamptz NOT NULL,
    PRIMARY KEY (cluster, source)
);

-- +goose Down
DROP TABLE source_progress;

-- source_checkpoints: where each pulled audit source (the Event Hubs
-- consumer of AKS clusters, through its Kafka endpoint) has stored up to,
-- per consumer group, topic (event hub) and partition: the offset of the
-- next record to read. The ingest role writes it after the records before
-- that offset are stored (at-least-once: the event key makes a re-read
-- store nothing twice), so that the replicas share partitions and pick up
-- where another left off with no blob store. The ingest role owns it, as
-- everything it writes; the reader role may read it (docs/sql.md).

-- +goose Up
CREATE TABLE source_checkpoints (
    source         text        NOT NULL,
    consumer_group text        NOT NULL,
    topic          text        NOT NULL,
    partition      integer     NOT NULL,
    next_offset    bigint      NOT NULL CHECK (next_offset >= 0),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source, consumer_group, topic, partition)
);

-- +goose Down
DROP TABLE source_checkpoints;

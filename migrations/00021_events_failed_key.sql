-- Short names of attempts (the failed and denied writes: events answered
-- with a code >= 300) end with the first hex digits of the event key:
-- resolving one reads the cluster's failed events whose key lies in a range
-- (store/reads EventsByKeyRange). The primary key (cluster, stage_at,
-- event_key) cannot serve it without the time, so this index does. Partial:
-- only failed events are attempts, so the successful ones, nearly all of
-- the record, cost the write path nothing.
--
-- A partitioned index cannot be built CONCURRENTLY. This migration makes
-- only the partitioned index, on the parent alone (ON ONLY: no partition is
-- scanned, nothing waits but the catalog change): it is invalid while an
-- existing partition has no index attached, and every partition made from
-- now on gets its own at creation. The store builds the existing
-- partitions' indexes afterwards, each CONCURRENTLY, and attaches them
-- (store/partitions BuildKeyIndex, at each upkeep): once all are attached,
-- PostgreSQL marks this index valid. Until then the planner uses the
-- partitions' indexes that exist.

-- +goose Up
CREATE INDEX IF NOT EXISTS events_failed_key ON ONLY events (cluster, event_key) WHERE response_code >= 300;

-- +goose Down
DROP INDEX IF EXISTS events_failed_key;

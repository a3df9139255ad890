-- log_segments_cutoffs: the segments that log a retention cutoff.
-- A pass that logs a row old enough for retention to have removed looks up
-- the newest cutoff logged (store/tamper newestCutoffSQL: the newest
-- segment whose kinds hold a 3) from the log size it read last: the first
-- such pass of a process, and every one on a log with no cutoff (retention
-- off, or a log younger than its first cutoff), read every segment's kinds
-- (the whole log, TOASTed arrays) to find none. This partial index holds
-- the few segments that have one (retention logs one an hour), so the
-- lookup is an index probe. It is not evidence: verify reads the segments.

-- +goose Up
CREATE INDEX log_segments_cutoffs ON log_segments (cluster, first_index) WHERE 3::smallint = ANY(kinds);

-- +goose Down
DROP INDEX log_segments_cutoffs;

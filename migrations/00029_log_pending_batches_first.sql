-- log_pending_batches.first_at: the time of a pending batch's oldest row,
-- computed once, when the batch is written, and indexed. An integration
-- pass took its batches in the order of their oldest row, and held back a
-- retention cutoff while a batch as old as it was pending, by unnesting
-- the times (ats) of every pending batch (two queries, each pass): a
-- backlog of N batches cost every pass N arrays read and unnested, so
-- catching it up was quadratic in it. The pass now reads its batches
-- in first_at order by the index (as many as it takes, at most MaxLeaves),
-- and the oldest pending row's time from the same index.
--
-- A generated column: whatever writes a batch (an older replica, during a
-- rolling upgrade, too) gets it, and nobody writes it. It orders the
-- passes and holds cutoffs back; it is no evidence (the leaves carry each
-- row's time).

-- +goose Up
-- log_first_at is the earliest non-NULL time of an array (NULL when none).
-- +goose StatementBegin
CREATE FUNCTION log_first_at(ats timestamptz[]) RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
SELECT min(a) FROM unnest(ats) AS a
$$;
-- +goose StatementEnd

ALTER TABLE log_pending_batches ADD COLUMN first_at timestamptz GENERATED ALWAYS AS (log_first_at(ats)) STORED;
CREATE INDEX log_pending_batches_first ON log_pending_batches (cluster, first_at);

-- +goose Down
DROP INDEX log_pending_batches_first;
ALTER TABLE log_pending_batches DROP COLUMN first_at;
DROP FUNCTION log_first_at(timestamptz[]);

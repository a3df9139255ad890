-- log_pending_batches: the tamper-evident log's pending rows of a batch,
-- one row per batch and cluster instead of one per stored row (the
-- batch's COPY into log_pending and the integrator's DELETE of each row
-- were 310 of the 876 bytes of WAL the log wrote per kept event: store/tamper
-- TestLogWALCost; docs/benchmarks.md, "The tamper-evident log"). The
-- arrays are parallel, as log_segments': the i-th row the batch stored is
-- (kinds[i], uids[i], keys[i], ats[i]), with its digest digests[i] when
-- the batch computed one (NULL, or a NULL element: the integrator reads
-- the row, as it does a log_pending row without one).
--
-- Written in the batch's transaction (a batch that rolls back, or stores
-- nothing, adds none), deleted whole by the integrator's pass that appends
-- its leaves: a batch is never split across passes. log_pending keeps what
-- is written one row at a time: retention cutoffs, and the versions an
-- admission observation's confirmation stores. The view log_pending_rows
-- reads both as rows.

-- +goose Up
CREATE TABLE log_pending_batches (
    cluster text          NOT NULL,
    kinds   smallint[]    NOT NULL CHECK (kinds <@ '{1,2}'::smallint[]),  -- 1 events, 2 object_versions
    uids    text[]        NOT NULL,  -- object_versions.uid, '' for events
    keys    bytea[]       NOT NULL,  -- events.event_key or object_versions.version_key
    ats     timestamptz[] NOT NULL,  -- events.stage_at or object_versions.changed_at
    digests bytea[],                 -- each row's digest (32 bytes), NULL when none
    CHECK (cardinality(kinds) > 0 AND cardinality(uids) = cardinality(kinds)
           AND cardinality(keys) = cardinality(kinds) AND cardinality(ats) = cardinality(kinds)
           AND (digests IS NULL OR cardinality(digests) = cardinality(kinds))
           -- one dimension, no NULL reference: a planted row stops nothing
           AND array_ndims(kinds) = 1 AND array_position(kinds, NULL) IS NULL
           AND array_position(uids, NULL) IS NULL AND array_position(keys, NULL) IS NULL
           AND array_position(ats, NULL) IS NULL)
);
-- Each row is deleted within seconds: vacuum by the number of dead rows
-- (and dead TOAST chunks: a batch's arrays are TOASTed), not by a fraction
-- of a table that is nearly always empty, so that pages are reused.
ALTER TABLE log_pending_batches SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 100,
    toast.autovacuum_vacuum_scale_factor = 0, toast.autovacuum_vacuum_threshold = 2000);

-- log_pending_rows: every pending row, of either table.
CREATE VIEW log_pending_rows AS
SELECT cluster, kind, uid, key, at, digest FROM log_pending
UNION ALL
SELECT b.cluster, l.kind, l.uid, l.key, l.at, l.digest
FROM log_pending_batches b, unnest(b.kinds, b.uids, b.keys, b.ats, b.digests) AS l(kind, uid, key, at, digest);

-- +goose Down
-- The pending batch rows go back to log_pending, as rows.
INSERT INTO log_pending (cluster, kind, uid, key, at, digest)
SELECT b.cluster, l.kind, l.uid, l.key, l.at, l.digest
FROM log_pending_batches b, unnest(b.kinds, b.uids, b.keys, b.ats, b.digests) AS l(kind, uid, key, at, digest);
DROP VIEW log_pending_rows;
DROP TABLE log_pending_batches;

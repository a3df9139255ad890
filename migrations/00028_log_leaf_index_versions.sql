-- log_leaf_index for versions only; each segment's range of event times.
-- The index's entries for events cost the ingest a heap tuple and a
-- B-tree insert (a WAL record) each (store/tamper TestLogWALCost;
-- docs/benchmarks.md, "The tamper-evident log"), and only the incremental
-- verify looked them up, for the events logged before its verified
-- checkpoint that are as new as the rows after it. It finds those now by
-- the segments whose range of event times holds theirs (events_from,
-- events_to: the earliest and latest stage_at of the segment's events;
-- infinity and -infinity, a range that holds no time, when it has none;
-- NULL only in a segment an older replica wrote after this migration), which the
-- integrator computes and writes in the segment's row: nothing per row.
-- Proofs are of versions, whose entries stay.
--
-- Neither is evidence: an inclusion proof checks each leaf they name
-- against the verified root, so an edited range reads more segments, or
-- fewer (an event it hides is then reported as not in the log), never
-- passes a changed row.

-- +goose Up
ALTER TABLE log_segments ADD COLUMN events_from timestamptz, ADD COLUMN events_to timestamptz;

UPDATE log_segments s SET (events_from, events_to) = (
    SELECT coalesce(min(l.at), 'infinity'), coalesce(max(l.at), '-infinity')
    FROM unnest(s.kinds, s.ats) AS l(kind, at) WHERE l.kind = 1);

-- The incremental verify's lookup: the segments whose events are as new
-- as the oldest row it looks for (events_to IS NULL: read them all).
-- A segment without events (a cutoff's, a pass of versions only) has
-- the range -infinity: never read for events.
CREATE INDEX log_segments_events_to ON log_segments (cluster, events_to);

-- Only versions' entries: the table is rebuilt rather than half deleted.
TRUNCATE log_leaf_index;
INSERT INTO log_leaf_index (cluster, ref_hash, log_index)
SELECT s.cluster, log_ref_hash(l.kind, l.uid, l.key), s.first_index + l.n - 1
FROM log_segments s, unnest(s.kinds, s.uids, s.keys) WITH ORDINALITY AS l(kind, uid, key, n)
WHERE l.kind = 2
ON CONFLICT DO NOTHING;

-- +goose Down
INSERT INTO log_leaf_index (cluster, ref_hash, log_index)
SELECT s.cluster, log_ref_hash(l.kind, l.uid, l.key), s.first_index + l.n - 1
FROM log_segments s, unnest(s.kinds, s.uids, s.keys) WITH ORDINALITY AS l(kind, uid, key, n)
WHERE l.kind = 1
ON CONFLICT DO NOTHING;
DROP INDEX log_segments_events_to;
ALTER TABLE log_segments DROP COLUMN events_from, DROP COLUMN events_to;

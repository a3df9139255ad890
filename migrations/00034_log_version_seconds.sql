-- log_version_seconds: which segments hold versions of which second, in
-- place of an entry per version in log_leaf_index.
-- The integrator wrote a log_leaf_index entry for every version it logged
-- (a heap tuple and a B-tree insert each, about a tenth of the log's
-- cost in PostgreSQL under `make bench`: docs/benchmarks.md, "The
-- tamper-evident log"). It now writes, in the pass that appends a
-- segment, one row per second of its versions' changed_at: a pass of
-- 10,000 versions written over two seconds writes two rows. A lookup
-- (an inclusion proof, `verify --incremental`) has the version's
-- changed_at (the row), so it finds the segments of that second by this
-- index and the version's leaf among their references (one or a few
-- segments: those integrated while versions of that second were being
-- committed).
--
-- A lookup aid, not evidence, as log_leaf_index: a proof checks the leaf
-- it finds against the signed tree; an entry removed or edited makes a
-- proof search the whole log and an incremental verify report the
-- version as not in the log (a full verify does not read it); a planted
-- entry costs a lookup the read of one more segment. No unique key: a log
-- rebuilt from its pending rows writes its entries again.
--
-- log_leaf_index keeps the entries written before, and those a replica of
-- an older release writes during a rolling upgrade: lookups read both.
-- Such a replica finds only log_leaf_index's: the versions that upgraded
-- integrators log during the rollout are, to its proofs, found by a
-- search of the log, and to its periodic verify, problems
-- (docs/upgrading.md). Nothing is rewritten.

-- +goose Up
CREATE TABLE log_version_seconds (
    cluster     text   NOT NULL,
    second      bigint NOT NULL,  -- floor(extract(epoch FROM changed_at)) of versions the segment logged
    first_index bigint NOT NULL   -- the segment's (log_segments.first_index)
);
CREATE INDEX log_version_seconds_second ON log_version_seconds (cluster, second, first_index);
COMMENT ON TABLE log_version_seconds IS 'the segments (first_index) that log versions of each second of changed_at (second: its Unix seconds), for proofs and incremental verifies to find a version''s leaf; a lookup aid, not evidence';

-- +goose Down
DROP TABLE log_version_seconds;

-- log_leaf_index keys that grow with time: log_version_ref.
-- A version's entry was keyed by log_ref_hash (migration 00026), 64 bits
-- of a SHA-256: each entry the integrator wrote went to a random page of
-- the index, so every pass touched (and, after a checkpoint, wrote whole
-- to the WAL) as many pages as it had versions, and the COPY of the
-- entries was the largest piece of the log's cost in PostgreSQL
-- (docs/benchmarks.md, "The tamper-evident log"). The key now begins with
-- the second of the version's changed_at (the `at` its leaf holds), then
-- 32 bits of the same hash: a pass's entries land at the right edge of the
-- index, in the few pages the last passes filled. Whoever looks a version
-- up has its changed_at (the row), so the lookup is the same index probe.
--
-- Two versions of one second share a key with a chance of one in 2^32
-- (about one pair a second at 90,000 versions a second): a lookup already
-- checks each leaf an entry names (it is a lookup aid, not evidence; a
-- proof checks the leaf against the signed tree). A changed_at edited
-- after its version was logged misses its entry: the log is then searched
-- (proofs) or the row reported (verify), as for an entry removed.

-- +goose Up
-- log_version_ref: the seconds of at since 2020-01-01 UTC (0 before it,
-- 2^31 - 1 from 2088 on, and for infinite times) in the high 32 bits of a
-- bigint, the low 32 bits of log_ref_hash(2, uid, key) in the low ones.
-- The integrator computes it in Go (store/tamper versionRef;
-- TestVersionRefIsLogVersionRef holds the two together).
-- +goose StatementBegin
CREATE FUNCTION log_version_ref(uid text, key bytea, at timestamptz) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
SELECT (CASE WHEN NOT isfinite(at) THEN CASE WHEN at < 'epoch' THEN 0 ELSE 2147483647 END
             ELSE least(greatest(floor(extract(epoch FROM at))::bigint - 1577836800, 0), 2147483647)
        END << 32)
     | (log_ref_hash(2::smallint, uid, key) & 4294967295)
$$;
-- +goose StatementEnd

-- The entries are rebuilt from the log (a lookup aid: what the segments
-- hold is what counts), in key order, and the index built after them.
DROP INDEX log_leaf_index_ref;
TRUNCATE log_leaf_index;
INSERT INTO log_leaf_index (cluster, ref_hash, log_index)
SELECT s.cluster, log_version_ref(l.uid, l.key, l.at), s.first_index + l.n - 1
FROM log_segments s, unnest(s.kinds, s.uids, s.keys, s.ats) WITH ORDINALITY AS l(kind, uid, key, at, n)
WHERE l.kind = 2 AND l.uid IS NOT NULL AND l.key IS NOT NULL AND l.at IS NOT NULL
ORDER BY 2;
CREATE INDEX log_leaf_index_ref ON log_leaf_index (ref_hash);

-- +goose Down
DROP INDEX log_leaf_index_ref;
TRUNCATE log_leaf_index;
INSERT INTO log_leaf_index (cluster, ref_hash, log_index)
SELECT s.cluster, log_ref_hash(l.kind, l.uid, l.key), s.first_index + l.n - 1
FROM log_segments s, unnest(s.kinds, s.uids, s.keys) WITH ORDINALITY AS l(kind, uid, key, n)
WHERE l.kind = 2 AND l.uid IS NOT NULL AND l.key IS NOT NULL;
CREATE INDEX log_leaf_index_ref ON log_leaf_index (ref_hash);
DROP FUNCTION log_version_ref(text, bytea, timestamptz);

-- log_leaf_index keys that grow with time: log_version_ref.
-- A version's entry was keyed by log_ref_hash (migration 00026), 64 bits
-- of a SHA-256: each entry the integrator wrote went to a random page of
-- the index, so every pass touched (and, after a checkpoint, wrote whole
-- to the WAL) as many pages as it had versions, and the COPY of the
-- entries was the largest piece of the log's cost in PostgreSQL
-- (docs/benchmarks.md, "The tamper-evident log"). The key now begins with
-- the second of the version's changed_at (the `at` its leaf holds), then
-- 32 bits of the same hash: a pass's entries land next to the last
-- passes' entries, in a few pages of the index (at its right edge, but
-- for the entries of the old key). Whoever looks a version
-- up has its changed_at (the row), so the lookup is the same index probe.
--
-- Two versions of one second share a key with a chance of one in 2^32
-- (about one pair a second at 90,000 versions a second): a lookup already
-- checks each leaf an entry names (it is a lookup aid, not evidence; a
-- proof checks the leaf against the signed tree). A changed_at edited
-- after its version was logged misses its entry: the log is then searched
-- (proofs) or the row reported (verify), as for an entry removed.
--
-- The entries already written keep their log_ref_hash keys: nothing is
-- rebuilt (the migration takes no time, however large the log), and the
-- lookups try both keys (store/tamper leafIndexSQL, indexedSQL), which
-- also finds the entries a replica of an older release writes during a
-- rolling upgrade. Such a replica's own lookups find only the entries of
-- the old key: the versions the upgraded integrators log during the
-- rollout are, to its proofs, found by a search of the log, and to its
-- periodic verify, problems (docs/upgrading.md).

-- +goose Up
-- log_version_ref: the seconds of at since 2020-01-01 UTC (0 before it,
-- 2^31 - 1 from 2088 on, and for infinite times) in the high 32 bits of a
-- bigint, the low 32 bits of log_ref_hash(2, uid, key) in the low ones;
-- NULL when one of them is. The integrator computes it in Go (store/tamper
-- versionRef; TestVersionRefIsLogVersionRef holds the two together).
-- Not STRICT, and of immutable parts only (the epoch of a UTC timestamp),
-- so that PostgreSQL inlines it into the queries that call it.
-- +goose StatementBegin
CREATE FUNCTION log_version_ref(uid text, key bytea, at timestamptz) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT CASE WHEN at IS NULL THEN NULL
            ELSE (CASE WHEN NOT isfinite(at) THEN CASE WHEN at < 'epoch' THEN 0 ELSE 2147483647 END
                       ELSE least(greatest(floor(extract(epoch FROM at AT TIME ZONE 'UTC'))::bigint - 1577836800, 0), 2147483647)
                  END << 32)
                 | (log_ref_hash(2::smallint, uid, key) & 4294967295)
       END
$$;
-- +goose StatementEnd

-- +goose Down
-- The entries an upgraded integrator wrote are found by the old key again.
UPDATE log_leaf_index x SET ref_hash = log_ref_hash(2::smallint, l.uid, l.key)
FROM log_segments s, unnest(s.kinds, s.uids, s.keys, s.ats) WITH ORDINALITY AS l(kind, uid, key, at, n)
WHERE s.cluster = x.cluster AND x.log_index = s.first_index + l.n - 1 AND l.kind = 2
  AND x.ref_hash = log_version_ref(l.uid, l.key, l.at);
DROP FUNCTION log_version_ref(text, bytea, timestamptz);

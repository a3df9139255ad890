-- log_leaf_index, narrower: a logged row is found by a 64-bit hash of its
-- reference (log_ref_hash) instead of by its kind, uid and key. The index
-- was 55% of the WAL the tamper-evident log writes (733 of 1,337 bytes per
-- kept event, store/tamper TestLogWALCost; docs/benchmarks.md, "The
-- tamper-evident log"): a heap tuple of about 110 bytes and an index
-- tuple of about 95 per logged row. Now 48 and 32 (461 bytes of WAL).
--
-- Still a lookup aid, not evidence (migration 00024): a hash names
-- candidate leaves, each checked against the signed tree, and another
-- row whose reference has the same hash (for a lookup among a billion
-- entries, about one chance in 2*10^10) only gives it a second candidate.

-- +goose Up
-- log_ref_hash is the first 8 bytes, as a signed big-endian integer, of
-- the SHA-256 of a row's kind (one byte), uid, a zero byte (no text holds
-- one) and key. The integrator, proofs and verify all compute it here.
-- +goose StatementBegin
CREATE FUNCTION log_ref_hash(kind smallint, uid text, key bytea) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
SELECT ('x' || encode(substring(sha256(set_byte('\x00'::bytea, 0, kind) || convert_to(uid, 'UTF8') || '\x00'::bytea || key) FROM 1 FOR 8), 'hex'))::bit(64)::bigint
$$;
-- +goose StatementEnd

DROP TABLE log_leaf_index;
CREATE TABLE log_leaf_index (
    cluster   text   NOT NULL,
    ref_hash  bigint NOT NULL,  -- log_ref_hash(kind, uid, key) of an events (1) or object_versions (2) row
    log_index bigint NOT NULL,
    PRIMARY KEY (cluster, ref_hash, log_index)
);

INSERT INTO log_leaf_index (cluster, ref_hash, log_index)
SELECT s.cluster, log_ref_hash(l.kind, l.uid, l.key), s.first_index + l.n - 1
FROM log_segments s, unnest(s.kinds, s.uids, s.keys) WITH ORDINALITY AS l(kind, uid, key, n)
WHERE l.kind IN (1, 2);

-- +goose Down
DROP TABLE log_leaf_index;
CREATE TABLE log_leaf_index (
    cluster   text     NOT NULL,
    kind      smallint NOT NULL CHECK (kind IN (1, 2)),
    uid       text     NOT NULL,
    key       bytea    NOT NULL,
    log_index bigint   NOT NULL,
    PRIMARY KEY (cluster, kind, key, uid, log_index)
);
INSERT INTO log_leaf_index (cluster, kind, uid, key, log_index)
SELECT s.cluster, l.kind, l.uid, l.key, s.first_index + l.n - 1
FROM log_segments s, unnest(s.kinds, s.uids, s.keys) WITH ORDINALITY AS l(kind, uid, key, n)
WHERE l.kind IN (1, 2);
DROP FUNCTION log_ref_hash(smallint, text, bytea);

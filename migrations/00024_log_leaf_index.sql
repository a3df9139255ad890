-- log_leaf_index: where each logged row is in its cluster's log (docs/sql.md,
-- docs/security.md "Tamper evidence"). The integrator writes one row per
-- leaf of an events or object_versions row in the transaction that appends
-- the segment (retention cutoffs have none), so that an inclusion proof
-- (tamper.ProveVersion) and an incremental verify find a row's leaf by an
-- index lookup instead of reading the references of every segment: the
-- cost no longer grows with the log.
--
-- It is a lookup aid, not evidence: a proof is checked against the signed
-- tree, and verify checks each leaf it names by an inclusion proof, so an
-- edited or planted row here gives a proof or a check that fails, never
-- one that passes. A full verify does not read it.

-- +goose Up
CREATE TABLE log_leaf_index (
    cluster   text     NOT NULL,
    kind      smallint NOT NULL CHECK (kind IN (1, 2)),  -- 1 events, 2 object_versions
    uid       text     NOT NULL,                          -- object_versions.uid, '' for events
    key       bytea    NOT NULL,                          -- events.event_key or object_versions.version_key
    log_index bigint   NOT NULL,
    PRIMARY KEY (cluster, kind, key, uid, log_index)
);

INSERT INTO log_leaf_index (cluster, kind, uid, key, log_index)
SELECT s.cluster, l.kind, l.uid, l.key, s.first_index + l.n - 1
FROM log_segments s, unnest(s.kinds, s.uids, s.keys) WITH ORDINALITY AS l(kind, uid, key, n)
WHERE l.kind IN (1, 2);

-- +goose Down
DROP TABLE log_leaf_index;

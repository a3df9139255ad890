-- The tamper-evident log (docs/security.md, "Tamper evidence"): one RFC 6962
-- Merkle tree per recorded cluster over every stored row of the record, with
-- signed checkpoints. store/tamper owns these tables.
--
-- log_pending: a narrow row per row a batch stored (written in the batch's
-- transaction, so a redelivery that rolls back, or stores nothing, adds
-- none), and the retention cutoffs to log before retention deletes. The
-- integrator drains it about every second, in the same transaction that
-- appends the leaves. No index: the integrator reads it whole, in order,
-- and it stays small; the ingest pays one heap insert per row.
--
-- log_segments: one row per integration pass of a cluster: the references
-- of the leaves it appended (parallel arrays, leaf first_index + i - 1 is
-- the i-th) and their rows' digests, the tree's stored hashes it added (golang.org/x/mod/sumdb/tlog
-- StoredHashIndex order, 32 bytes each, from stored_from) and the signed
-- checkpoint of the tree after it (a C2SP tlog-checkpoint note). The
-- signing key is never in the database.

-- +goose Up
CREATE TABLE log_pending (
    cluster text        NOT NULL,
    kind    smallint    NOT NULL CHECK (kind IN (1, 2, 3)),  -- 1 events, 2 object_versions, 3 retention cutoff
    uid     text        NOT NULL DEFAULT '',  -- object_versions.uid
    key     bytea       NOT NULL DEFAULT '',  -- events.event_key or object_versions.version_key
    at      timestamptz NOT NULL              -- events.stage_at, object_versions.changed_at, or the cutoff
);
-- Every row is deleted within seconds: vacuum it by the number of dead
-- rows, not by a fraction of a table that is nearly always empty, so that
-- its pages are reused rather than the file grown.
ALTER TABLE log_pending SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 20000);

CREATE TABLE log_segments (
    cluster       text          NOT NULL,
    first_index   bigint        NOT NULL,  -- the log index of its first leaf
    tree_size     bigint        NOT NULL,  -- the size of the tree after it
    stored_from   bigint        NOT NULL,  -- the index of its first stored hash
    kinds         smallint[]    NOT NULL,
    uids          text[]        NOT NULL,
    keys          bytea[]       NOT NULL,
    ats           timestamptz[] NOT NULL,
    digests       bytea         NOT NULL,  -- each leaf's row digest (SHA-256 of its encoding), 32 bytes each
    hashes        bytea         NOT NULL,
    checkpoint    text          NOT NULL,
    integrated_at timestamptz   NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster, first_index)
);

-- log_leaves: one row per leaf of the log, with the row it commits to.
CREATE VIEW log_leaves AS
SELECT s.cluster, s.first_index + l.n - 1 AS log_index,
       CASE l.kind WHEN 1 THEN 'events' WHEN 2 THEN 'object_versions' ELSE 'retention_cutoff' END AS row_table,
       l.uid, l.key, l.at, s.integrated_at
FROM log_segments s, unnest(s.kinds, s.uids, s.keys, s.ats) WITH ORDINALITY AS l(kind, uid, key, at, n);

-- +goose Down
DROP VIEW log_leaves;
DROP TABLE log_segments;
DROP TABLE log_pending;

-- log_leaf_index found by ref_hash alone, with no unique key.
--
-- Its primary key (cluster, ref_hash, log_index) made every version's
-- entry a unique B-tree insert whose comparisons began with the cluster's
-- text: under `make bench`'s load the integrator's COPY of the entries
-- took about 11 µs of PostgreSQL's time per version (pg_stat_statements),
-- the largest share of what the log costs the database. On the record of a
-- bench run, 4,600 entries: the heap alone 0.6 µs each, the primary key
-- 3.3 µs more, an index on ref_hash (a bigint) 1.5 µs more.
--
-- The index is not evidence (a proof and an incremental verify check
-- each leaf an entry names), so nothing needs its entries unique: an entry
-- twice (a log whose segments were removed and logged again) names the
-- same leaf twice, and each lookup filters on the cluster, which 64 bits
-- of hash nearly never share with another cluster's row. The table is
-- only ever inserted into (no UPDATE or DELETE; retention keeps the log),
-- so it needs no replica identity for logical replication either.

-- +goose Up
CREATE INDEX log_leaf_index_ref ON log_leaf_index (ref_hash);
ALTER TABLE log_leaf_index DROP CONSTRAINT log_leaf_index_pkey;

-- +goose Down
DELETE FROM log_leaf_index WHERE ctid NOT IN (
    SELECT min(ctid) FROM log_leaf_index GROUP BY cluster, ref_hash, log_index);
ALTER TABLE log_leaf_index ADD PRIMARY KEY (cluster, ref_hash, log_index);
DROP INDEX log_leaf_index_ref;

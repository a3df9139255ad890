-- Short names (app-config-3f9a2c1b) end with the first hex digits of a
-- version key: resolving one reads the cluster's versions whose key lies in
-- a range (store/reads VersionsByKeyRange). The primary key (cluster, uid,
-- version_key) cannot serve it without the uid, so this index does.
--
-- Built CONCURRENTLY so that upgrading a large record does not block
-- ingest; outside a transaction, as CONCURRENTLY requires. An index left
-- invalid by an interrupted build is dropped and built again on the next
-- start.

-- +goose NO TRANSACTION

-- +goose Up
DROP INDEX CONCURRENTLY IF EXISTS object_versions_key;
CREATE INDEX CONCURRENTLY object_versions_key ON object_versions (cluster, version_key);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS object_versions_key;

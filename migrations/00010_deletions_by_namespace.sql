-- "Who deleted what in namespace N", newest first: the incident's first
-- question, asked of every namespace. object_versions_deletes_time serves it
-- for the whole cluster, but for one namespace PostgreSQL had to walk the
-- cluster's deletions newest first and drop the other namespaces' (or walk
-- every version of the namespace and drop what is not a delete): on a record
-- of 5 million versions, a namespace with few deletions took longer than
-- the API's request timeout (make bench-read). This index reads the
-- namespace's deletions in order and stops at the page's end.
--
-- Built CONCURRENTLY so that upgrading a large record does not block
-- ingest; outside a transaction, as CONCURRENTLY requires. An index left
-- invalid by an interrupted build is dropped and built again on the next
-- start.

-- +goose NO TRANSACTION

-- +goose Up
DROP INDEX CONCURRENTLY IF EXISTS object_versions_deletes_ns_time;
CREATE INDEX CONCURRENTLY object_versions_deletes_ns_time ON object_versions (cluster, namespace, changed_at)
    WHERE verb IN ('delete', 'deletecollection');

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS object_versions_deletes_ns_time;

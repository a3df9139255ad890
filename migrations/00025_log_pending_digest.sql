-- The tamper-evident log's pending rows carry, for the object versions a
-- batch stores, the row's digest (store/tamper RowDigest of the values the
-- sink wrote, which are the stored ones: every column of object_versions
-- comes from the batch, and json keeps its text), so that the integrator
-- need not read each version back and have PostgreSQL hash its object
-- (docs/benchmarks.md, "The tamper-evident log"). NULL (an older replica, a
-- version a confirmation stores in SQL, an event, a cutoff): the
-- integrator reads the row, as before.

-- +goose Up
ALTER TABLE log_pending ADD COLUMN digest bytea CHECK (octet_length(digest) = 32);

-- +goose Down
ALTER TABLE log_pending DROP COLUMN digest;

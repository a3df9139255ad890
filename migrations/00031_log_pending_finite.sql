-- A pending row's time is a finite time. No ingest writes infinity or
-- -infinity, but log_pending took one (and a batch's ats did), and a
-- planted one stopped every integration pass of its cluster until the
-- integrator learnt to skip it (store/tamper drainSQL): refuse new ones.
-- NOT VALID: rows already there are not checked (the integrator takes
-- them out), so the migration reads nothing.

-- +goose Up
ALTER TABLE log_pending ADD CONSTRAINT log_pending_at_finite CHECK (isfinite(at)) NOT VALID;
ALTER TABLE log_pending_batches ADD CONSTRAINT log_pending_batches_ats_finite
    CHECK (NOT ('infinity'::timestamptz = ANY(ats) OR '-infinity'::timestamptz = ANY(ats))) NOT VALID;

-- +goose Down
ALTER TABLE log_pending_batches DROP CONSTRAINT log_pending_batches_ats_finite;
ALTER TABLE log_pending DROP CONSTRAINT log_pending_at_finite;

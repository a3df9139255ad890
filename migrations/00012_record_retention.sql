-- The record's retention cutoff, written by the ingest role's hourly
-- retention pass: events and superseded versions older than it are gone.
-- The restore API, which owns the restores and plans in a schema of its own
-- (migrations/api), reads it to expire those made before the same cutoff,
-- so that they go with the record without the ingest role writing them.
--
-- public.restores is no longer written: the API copies its rows into
-- options_record_api.restores when it first starts on this release.

-- +goose Up
CREATE TABLE record_retention (
    singleton  boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    cutoff     timestamptz NOT NULL,   -- what was made before this is expired
    applied_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE restores IS 'superseded by options_record_api.restores (the restore API copies these rows there and writes only there); drop it once every API replica runs a release with migrations/api (docs/upgrading.md)';

-- +goose Down
COMMENT ON TABLE restores IS NULL;
DROP TABLE record_retention;

-- log_pending_batches.refs: a pending batch's references packed into one
-- bytea value (store/tamper/refpack: a version byte, then per row its
-- kind, time, uid, key and digest), with first_at and ref_count, the
-- batch's oldest time and its number of rows, written by the ingest. The
-- parallel arrays of migration 00027 cost PostgreSQL, per kept event
-- (an event and its version), about 1 µs receiving them element by
-- element, 0.7 µs computing the generated first_at (log_first_at: a SQL
-- function planned at each INSERT) and 0.5 µs sending them back to the
-- integrator; one bytea is received and sent as it is.
--
-- A row holds one form or the other: refs (this release's ingest) or the
-- arrays (an older replica's, during a rolling upgrade), never both. An
-- older writer knows neither first_at nor ref_count: a trigger fills them
-- from its arrays (only for a row without refs: the new writer's rows do
-- not run it). An older integrator reads no refs: the window over
-- cardinality(kinds) gives such a row no place, so it leaves it pending
-- for the upgraded integrators.
--
-- The ingest role may write anything here: a value that is not of the
-- layout, or whose first_at or ref_count is not its rows', is taken out
-- unlogged by the integrator (logged at error level, counted), and
-- log_pending_rows shows none of its rows. It stops nothing.

-- +goose Up
ALTER TABLE log_pending_batches
    ALTER COLUMN first_at DROP EXPRESSION,
    ALTER COLUMN kinds DROP NOT NULL,
    ALTER COLUMN uids DROP NOT NULL,
    ALTER COLUMN keys DROP NOT NULL,
    ALTER COLUMN ats DROP NOT NULL,
    ADD COLUMN refs bytea,         -- the packed references (store/tamper/refpack), or NULL: the arrays
    ADD COLUMN ref_count integer;  -- how many rows refs (or kinds) holds
UPDATE log_pending_batches SET ref_count = cardinality(kinds);
-- A row with no time or no reference (planted with 00027's CHECK dropped)
-- names nothing the integrator would log: gone, so that the constraints
-- below take the table (a planted row must not stop the upgrade).
DELETE FROM log_pending_batches WHERE first_at IS NULL OR coalesce(ref_count, 0) < 1;
ALTER TABLE log_pending_batches
    ALTER COLUMN first_at SET NOT NULL,
    ALTER COLUMN ref_count SET NOT NULL,
    ADD CONSTRAINT log_pending_batches_ref_count CHECK (ref_count > 0),
    ADD CONSTRAINT log_pending_batches_one_form CHECK (CASE WHEN refs IS NULL
        THEN num_nulls(kinds, uids, keys, ats) = 0
        ELSE num_nonnulls(kinds, uids, keys, ats, digests) = 0 END);
-- lz4, as the record's objects: a batch's value (about 190 bytes a kept
-- event) TOASTs to about 156 bytes of WAL a kept event with it, 199 with
-- none (SET STORAGE EXTERNAL), at the same CPU (BenchmarkPendingBatch);
-- pglz, the default, costs more CPU.
ALTER TABLE log_pending_batches ALTER COLUMN refs SET COMPRESSION lz4;

-- +goose StatementBegin
CREATE FUNCTION log_pending_batches_arrays() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.first_at := log_first_at(NEW.ats);
    NEW.ref_count := cardinality(NEW.kinds);
    RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER log_pending_batches_arrays BEFORE INSERT OR UPDATE ON log_pending_batches
    FOR EACH ROW WHEN (NEW.refs IS NULL) EXECUTE FUNCTION log_pending_batches_arrays();

-- log_pending_refs is the rows of a packed value, as store/tamper/refpack
-- reads them, when its first_at and ref_count are theirs; no row when the
-- value is malformed or they are not (as the integrator, which logs none
-- of them). Never an error: a planted value stops no reader of
-- log_pending_rows.
-- +goose StatementBegin
CREATE FUNCTION log_pending_refs(v bytea, first_at timestamptz, ref_count integer)
RETURNS TABLE (kind smallint, uid text, key bytea, at timestamptz, digest bytea)
LANGUAGE plpgsql IMMUTABLE AS $$  -- not PARALLEL SAFE: its EXCEPTION block is a subtransaction
DECLARE
    b bytea;
    len bigint := octet_length(v);  -- the value's size, without reading it
    off int := 1;               -- get_byte counts from 0
    tag int;
    us bigint;
    l bigint;
    c int;
    s int;
    earliest bigint;
    kinds smallint[] := '{}';
    uids text[] := '{}';
    keys bytea[] := '{}';
    ats timestamptz[] := '{}';
    digests bytea[] := '{}';
BEGIN
    -- At most 65536 rows and 32 MiB (refpack.MaxRows, MaxBytes; the
    -- ingest writes no more), and rows only as many as ref_count says:
    -- what is planted costs a reader no more than that.
    IF v IS NULL OR len < 1 OR len > 33554432 OR ref_count IS NULL OR ref_count < 1 OR ref_count > 65536 THEN
        RETURN;
    END IF;
    b := v || ''::bytea;  -- detoasted once
    IF get_byte(b, 0) <> 1 THEN
        RETURN;
    END IF;
    BEGIN
        WHILE off < len LOOP
            IF cardinality(kinds) >= ref_count THEN
                RETURN;  -- more rows than ref_count
            END IF;
            tag := get_byte(b, off);
            IF tag NOT IN (1, 2, 129, 130) OR len - off - 1 < 8 THEN
                RETURN;
            END IF;
            us := ('x' || encode(substring(b FROM off + 2 FOR 8), 'hex'))::bit(64)::bigint;
            IF us < -210866803200000000 THEN
                RETURN;
            END IF;
            off := off + 9;
            FOR i IN 1..2 LOOP
                l := 0; s := 0;
                LOOP
                    IF off >= len OR s = 35 THEN
                        RETURN;
                    END IF;
                    c := get_byte(b, off);
                    off := off + 1;
                    l := l | ((c & 127)::bigint << s);
                    s := s + 7;
                    EXIT WHEN c < 128;
                END LOOP;
                IF l > len - off THEN
                    RETURN;
                END IF;
                IF i = 1 THEN
                    uids := uids || convert_from(substring(b FROM off + 1 FOR l::int), 'UTF8');
                ELSE
                    keys := keys || substring(b FROM off + 1 FOR l::int);
                END IF;
                off := off + l::int;
            END LOOP;
            IF tag >= 128 THEN
                IF len - off < 32 THEN
                    RETURN;
                END IF;
                digests := digests || substring(b FROM off + 1 FOR 32);
                off := off + 32;
            ELSE
                digests := digests || NULL::bytea;
            END IF;
            kinds := kinds || (tag & 127)::smallint;
            ats := ats || ('1970-01-01 00:00:00+00'::timestamptz + (us / 86400000000) * interval '86400 seconds'
                                                               + (us % 86400000000) * interval '1 microsecond');
            earliest := least(earliest, us);
        END LOOP;
    EXCEPTION WHEN OTHERS THEN  -- a uid that is not UTF-8 text
        RETURN;
    END;
    IF ref_count IS DISTINCT FROM cardinality(kinds) OR first_at IS DISTINCT FROM
        '1970-01-01 00:00:00+00'::timestamptz + (earliest / 86400000000) * interval '86400 seconds'
                                              + (earliest % 86400000000) * interval '1 microsecond' THEN
        RETURN;
    END IF;
    RETURN QUERY SELECT * FROM unnest(kinds, uids, keys, ats, digests);
END
$$;
-- +goose StatementEnd

-- log_pending_rows: every pending row, of either table, of either form.
CREATE OR REPLACE VIEW log_pending_rows AS
SELECT cluster, kind, uid, key, at, digest FROM log_pending
UNION ALL
SELECT b.cluster, l.kind, l.uid, l.key, l.at, l.digest
FROM log_pending_batches b, unnest(b.kinds, b.uids, b.keys, b.ats, b.digests) AS l(kind, uid, key, at, digest)
WHERE b.refs IS NULL
UNION ALL
SELECT b.cluster, l.kind, l.uid, l.key, l.at, l.digest
FROM log_pending_batches b, log_pending_refs(b.refs, b.first_at, b.ref_count) AS l
WHERE b.refs IS NOT NULL;

-- +goose Down
-- Packed batches go back to arrays.
UPDATE log_pending_batches b SET kinds = u.kinds, uids = u.uids, keys = u.keys, ats = u.ats,
    digests = CASE WHEN u.has_digest THEN u.digests END, refs = NULL
FROM (SELECT b.ctid AS id, array_agg(l.kind) AS kinds, array_agg(l.uid) AS uids, array_agg(l.key) AS keys,
             array_agg(l.at) AS ats, array_agg(l.digest) AS digests, bool_or(l.digest IS NOT NULL) AS has_digest
      FROM log_pending_batches b, log_pending_refs(b.refs, b.first_at, b.ref_count) AS l
      WHERE b.refs IS NOT NULL GROUP BY b.ctid) u
WHERE b.ctid = u.id;
DELETE FROM log_pending_batches WHERE refs IS NOT NULL;  -- malformed: no row to give back
CREATE OR REPLACE VIEW log_pending_rows AS
SELECT cluster, kind, uid, key, at, digest FROM log_pending
UNION ALL
SELECT b.cluster, l.kind, l.uid, l.key, l.at, l.digest
FROM log_pending_batches b, unnest(b.kinds, b.uids, b.keys, b.ats, b.digests) AS l(kind, uid, key, at, digest);
DROP FUNCTION log_pending_refs(bytea, timestamptz, integer);
DROP TRIGGER log_pending_batches_arrays ON log_pending_batches;
DROP FUNCTION log_pending_batches_arrays();
ALTER TABLE log_pending_batches
    DROP CONSTRAINT log_pending_batches_one_form,
    DROP CONSTRAINT log_pending_batches_ref_count,
    DROP COLUMN ref_count,
    DROP COLUMN refs,
    DROP COLUMN first_at,
    ALTER COLUMN kinds SET NOT NULL,
    ALTER COLUMN uids SET NOT NULL,
    ALTER COLUMN keys SET NOT NULL,
    ALTER COLUMN ats SET NOT NULL;
ALTER TABLE log_pending_batches ADD COLUMN first_at timestamptz GENERATED ALWAYS AS (log_first_at(ats)) STORED;
CREATE INDEX log_pending_batches_first ON log_pending_batches (cluster, first_at);

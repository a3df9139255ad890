-- object_exact: the state exactly as the apiserver sent it, kept only when
-- object had to differ from it. PostgreSQL reads no NUL (\u0000) or lone
-- UTF-16 surrogate escape as jsonb or text, so object holds such a state
-- with U+FFFD in their place, and every query of it works; object_exact
-- keeps the text itself (json stores it as is), and the restore, the
-- manifest and the diff read it, so the state is given back as it was.
-- NULL for every other version. Adding a column without a default rewrites
-- nothing.

-- +goose Up
ALTER TABLE object_versions ADD COLUMN object_exact json COMPRESSION lz4;
COMMENT ON COLUMN object_versions.object_exact IS 'the state as the apiserver sent it, when object had to replace characters PostgreSQL cannot read (NUL, lone surrogates) with U+FFFD; NULL otherwise';

-- +goose Down
ALTER TABLE object_versions DROP COLUMN object_exact;

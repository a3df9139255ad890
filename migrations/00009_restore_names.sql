-- A restore created through the aggregated API (kubectl create -f
-- restore.yaml) is a Kubernetes object: it has a namespace and a name, by
-- which its author reads it back (kubectl get restore NAME -o yaml). The
-- direct API's restores have neither. A name is taken by a restore that
-- ran, not by a dry run (which kubectl create --dry-run=server makes and
-- does not keep).

-- +goose Up
ALTER TABLE restores ADD COLUMN object_namespace text, ADD COLUMN object_name text;
CREATE UNIQUE INDEX restores_object_name ON restores (cluster, object_namespace, object_name)
    WHERE object_name IS NOT NULL AND NOT dry_run;

-- +goose Down
DROP INDEX restores_object_name;
ALTER TABLE restores DROP COLUMN object_name, DROP COLUMN object_namespace;

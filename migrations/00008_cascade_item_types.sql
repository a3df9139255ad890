-- The states recorded from a deletecollection before the sink filled in the
-- items' type. The namespace controller deletes a namespace's objects with
-- one deletecollection per resource, answered by a List (ConfigMapList, ...)
-- whose items carry no apiVersion and kind of their own. The sink stored
-- each item as it came, so the state could be read but not exported or
-- restored ("not a Kubernetes object"). The sink now adds the List's type
-- to each item; this repairs the rows stored before.
--
-- The apiVersion is the row's own (api_group/api_version, from the event's
-- objectRef). The kind is the one recorded for the same object (its create,
-- an update or a baseline), else for the same resource in the same
-- namespace, else the built-in kind of the resource. A row none of these
-- names is left as it is (the restore API says it is not a Kubernetes
-- object). Only deletecollection rows are visited, through the partial index
-- of deletions; a row the json functions cannot read is left as it is,
-- never failing the migration (and with it the sink's start-up).

-- +goose Up
-- +goose StatementBegin
DO $$
DECLARE
    r record;
    k text;
    doc json;
BEGIN
    FOR r IN
        SELECT cluster, uid, version_key, api_group, api_version, resource, namespace, object::text AS body
        FROM object_versions
        WHERE verb IN ('delete', 'deletecollection') AND verb = 'deletecollection'
          AND complete AND object IS NOT NULL AND api_version <> ''
    LOOP
        BEGIN
            doc := r.body::json;
            CONTINUE WHEN json_typeof(doc) <> 'object'
                OR doc->>'apiVersion' IS NOT NULL OR doc->>'kind' IS NOT NULL
                OR doc->'metadata'->>'name' IS NULL;
            k := (SELECT w.kind FROM object_versions w
                  WHERE w.cluster = r.cluster AND w.uid = r.uid AND w.complete AND w.kind <> '' LIMIT 1);
            IF k IS NULL THEN
                k := (SELECT w.kind FROM object_versions w
                      WHERE w.cluster = r.cluster AND w.namespace = r.namespace AND w.api_group = r.api_group
                        AND w.resource = r.resource AND w.subresource = '' AND w.complete AND w.kind <> '' LIMIT 1);
            END IF;
            IF k IS NULL THEN
                k := (SELECT b.kind FROM (VALUES
                    ('', 'configmaps', 'ConfigMap'), ('', 'secrets', 'Secret'), ('', 'services', 'Service'),
                    ('', 'serviceaccounts', 'ServiceAccount'), ('', 'endpoints', 'Endpoints'), ('', 'pods', 'Pod'),
                    ('', 'persistentvolumeclaims', 'PersistentVolumeClaim'),
                    ('', 'replicationcontrollers', 'ReplicationController'), ('', 'limitranges', 'LimitRange'),
                    ('', 'resourcequotas', 'ResourceQuota'), ('', 'podtemplates', 'PodTemplate'), ('', 'events', 'Event'),
                    ('apps', 'deployments', 'Deployment'), ('apps', 'statefulsets', 'StatefulSet'),
                    ('apps', 'daemonsets', 'DaemonSet'), ('apps', 'replicasets', 'ReplicaSet'),
                    ('apps', 'controllerrevisions', 'ControllerRevision'),
                    ('batch', 'jobs', 'Job'), ('batch', 'cronjobs', 'CronJob'),
                    ('networking.k8s.io', 'ingresses', 'Ingress'), ('networking.k8s.io', 'networkpolicies', 'NetworkPolicy'),
                    ('rbac.authorization.k8s.io', 'roles', 'Role'), ('rbac.authorization.k8s.io', 'rolebindings', 'RoleBinding'),
                    ('policy', 'poddisruptionbudgets', 'PodDisruptionBudget'),
                    ('autoscaling', 'horizontalpodautoscalers', 'HorizontalPodAutoscaler'),
                    ('coordination.k8s.io', 'leases', 'Lease'), ('discovery.k8s.io', 'endpointslices', 'EndpointSlice'),
                    ('events.k8s.io', 'events', 'Event'), ('storage.k8s.io', 'csistoragecapacities', 'CSIStorageCapacity'),
                    ('optionsrecord.io', 'optionsrecordcontrollers', 'OptionsRecordController')
                ) AS b(api_group, resource, kind)
                WHERE b.api_group = r.api_group AND b.resource = r.resource);
            END IF;
            CONTINUE WHEN k IS NULL;
            UPDATE object_versions
            SET kind = k,
                object = ('{"apiVersion":'
                          || to_json(CASE WHEN r.api_group = '' THEN r.api_version
                                          ELSE r.api_group || '/' || r.api_version END)::text
                          || ',"kind":' || to_json(k)::text || ','
                          || ltrim(substr(ltrim(r.body), 2)))::json
            WHERE cluster = r.cluster AND uid = r.uid AND version_key = r.version_key;
        EXCEPTION WHEN data_exception THEN
            NULL; -- unreadable as json (e.g. a lone surrogate escape): left as it is
        END;
    END LOOP;
END $$;
-- +goose StatementEnd

-- +goose Down
SELECT 1;

package reads

// Reads of the record as it was at a time: a namespace's objects and
// the resources recorded in it.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// AsOf returns the objects of a namespace ("" for cluster-scoped objects)
// as they were at a time: the newest recorded full state of each object
// that existed then, with its object.
func (r *Reader) AsOf(ctx context.Context, cluster, namespace string, at time.Time) ([]VersionRecord, error) {
	rows, err := r.db.Query(ctx, asOfSQL, cluster, namespace, at)
	if err != nil {
		return nil, fmt.Errorf("store: objects of %q as of %s: %w", namespace, at.Format(time.RFC3339), err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[VersionRecord])
	if err != nil {
		return nil, fmt.Errorf("store: objects of %q as of %s: %w", namespace, at.Format(time.RFC3339), err)
	}
	return out, nil
}

// GroupResource names a resource of an API group ("" is the core group).
type GroupResource struct {
	Group, Resource string
}

// AsOfQuery selects the objects of one namespace as they were at a time.
// Nil Resources and Names do not filter.
type AsOfQuery struct {
	Cluster   string
	Namespace string // "" for cluster-scoped objects
	At        time.Time
	Resources []GroupResource
	Names     []string
	Limit     int
	// ByUID orders the objects by uid and, with AfterUID, starts after
	// that uid: pages of a listing (the default orders by group,
	// resource and name, for plans).
	ByUID    bool
	AfterUID string
}

// asOfMetaSelect is versionSelect over the metadata of the inner query:
// has_object is computed there, so the bodies never leave the index scan.
var asOfMetaSelect = strings.Replace(versionSelect, "(v.object IS NOT NULL) AS has_object", "v.has_object", 1)

func asOfMetaSQL(q AsOfQuery) (string, []any) {
	var b sqlBuilder
	b.where("o.cluster = " + b.arg(q.Cluster))
	b.where("o.namespace = " + b.arg(q.Namespace))
	at := b.arg(q.At)
	b.where("o.changed_at <= " + at)
	b.where("(o.complete OR o.deleted)")
	if q.Resources != nil {
		groups, resources := make([]string, len(q.Resources)), make([]string, len(q.Resources))
		for i, gr := range q.Resources {
			groups[i], resources[i] = gr.Group, gr.Resource
		}
		b.where("(o.api_group, o.resource) IN (SELECT * FROM unnest(" + b.arg(groups) + "::text[], " + b.arg(resources) + "::text[]))")
	}
	if q.Names != nil {
		b.where("o.name = ANY(" + b.arg(q.Names) + "::text[])")
	}
	if q.AfterUID != "" {
		b.where("o.uid > " + b.arg(q.AfterUID))
	}
	order := "v.api_group, v.resource, v.name"
	if q.ByUID {
		order = "v.uid"
	}
	stale := `EXISTS (SELECT 1 FROM object_versions x
           WHERE x.cluster = v.cluster AND x.uid = v.uid AND NOT x.complete AND NOT x.deleted
             AND x.resource_version > v.resource_version AND x.changed_at <= ` + at + `)`
	return fmt.Sprintf(asOfMetaSelect, "NULL::json", stale) + `
FROM (
    SELECT DISTINCT ON (o.uid) o.cluster, o.uid, o.version_key, o.resource_version, o.origin, o.verb, o.changed_at,
           o.event_key, o.api_group, o.api_version, o.kind, o.resource, o.subresource, o.namespace, o.name,
           o.created, o.deleted, o.complete, o.secret_digested, (o.object IS NOT NULL) AS has_object
    FROM object_versions o` + b.whereSQL() + `
    ORDER BY o.uid, o.resource_version DESC NULLS FIRST, o.deleted DESC, o.changed_at DESC
) v
LEFT JOIN events e ON e.cluster = v.cluster AND e.event_key = v.event_key AND e.stage_at = v.changed_at
WHERE NOT v.deleted AND NOT ` + fmt.Sprintf(succeeded, at) + `
ORDER BY ` + order + `
LIMIT ` + strconv.Itoa(q.Limit), b.args
}

// ObjectsAsOf is AsOf without the objects' bodies (load those one by one
// with Version), filtered by resources and names in the database and
// bounded by q.Limit: what a plan reads before it knows what it keeps.
func (r *Reader) ObjectsAsOf(ctx context.Context, q AsOfQuery) ([]VersionRecord, error) {
	if q.Cluster == "" || q.Limit <= 0 {
		return nil, errors.New("store: objects as of: cluster and limit are required")
	}
	sql, args := asOfMetaSQL(q)
	return queryAll[VersionRecord](ctx, r.db, "objects as of", sql, args...)
}

const resourcesInSQL = `
SELECT DISTINCT o.api_group AS group, o.resource AS resource
FROM object_versions o
WHERE o.cluster = $1 AND o.namespace = $2 AND o.changed_at <= $3
ORDER BY 1, 2
LIMIT $4`

// ResourcesIn returns the resources of which the record holds versions in
// a namespace up to a time, at most limit of them.
func (r *Reader) ResourcesIn(ctx context.Context, cluster, namespace string, at time.Time, limit int) ([]GroupResource, error) {
	rows, err := r.db.Query(ctx, resourcesInSQL, cluster, namespace, at, limit)
	if err != nil {
		return nil, fmt.Errorf("store: resources of %q: %w", namespace, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[GroupResource])
	if err != nil {
		return nil, fmt.Errorf("store: resources of %q: %w", namespace, err)
	}
	return out, nil
}

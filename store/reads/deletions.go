package reads

// Reads of deletions: who deleted what, with the cascades they started.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Deletion is a row of the deletions view with its version's identity.
type Deletion struct {
	VersionRecord
	// StateKey is the version holding the last state of the object (the
	// delete itself when its answer held the object); nil when unknown.
	StateKey []byte `db:"state_key"`
	// InitiatedAt is when the action that started its cascade happened.
	InitiatedAt *time.Time `db:"initiated_at"`
}

// DeletionQuery selects deletions; unset fields do not filter.
type DeletionQuery struct {
	Cluster   string
	Group     *string
	Resource  string
	Namespace *string
	// NamespacedOnly, with no Namespace, leaves out cluster-scoped objects.
	NamespacedOnly bool
	Name           string
	UID            string // the deleted object's
	User           string // who deleted (the authenticated caller)
	Since          time.Time
	Until          time.Time
	After          *Cursor
	Limit          int
}

// deletionsSelect is a page of the deletions view read from
// object_versions alone (see actors.go): the same rows in the same order,
// with the view's prior-state rule (object_history) for state_key and
// stale. Deletions then attaches who deleted (the events) and, for the
// deletes of a cascade actor, who started the cascade (the view itself, for
// those rows only).
const deletionsSelect = `
SELECT v.cluster, v.uid, v.version_key, v.resource_version, v.origin, v.verb, v.changed_at,
       v.api_group, v.api_version, v.kind, v.resource, v.subresource, v.namespace, v.name,
       v.created, v.deleted, v.complete, v.secret_digested, (v.object IS NOT NULL) AS has_object,
       NULL::json AS object,
       EXISTS (SELECT 1 FROM object_versions s
               WHERE s.cluster = v.cluster AND s.uid = v.uid AND NOT s.complete AND NOT s.deleted
                 AND s.resource_version > p.resource_version
                 AND (v.resource_version IS NULL OR s.resource_version < v.resource_version)) AS stale,
       '' AS audit_id, '' AS username, NULL::text[] AS user_groups, '' AS impersonated_user,
       NULL::text[] AS impersonated_groups, NULL::text[] AS source_ips, '' AS user_agent,
       0::integer AS response_code, v.event_key,
       CASE WHEN v.object IS NOT NULL THEN v.version_key
            WHEN p.resource_version IS NOT NULL THEN p.version_key END AS state_key,
       NULL::timestamptz AS initiated_at
FROM object_versions v%s
LEFT JOIN LATERAL (
    SELECT pv.version_key, pv.resource_version
    FROM object_versions pv
    WHERE pv.cluster = v.cluster AND pv.uid = v.uid AND pv.complete AND NOT pv.deleted
      AND pv.version_key <> v.version_key AND NOT v.created
      AND (v.resource_version IS NULL OR pv.resource_version < v.resource_version
           OR (v.deleted AND pv.resource_version = v.resource_version))
    ORDER BY pv.resource_version DESC NULLS LAST, pv.changed_at DESC
    LIMIT 1
) p ON true`

// deletionRow is a Deletion with the key of its event.
type deletionRow struct {
	Deletion
	EventKey []byte `db:"event_key"`
}

// cascadeSQL is who started the cascades behind deletes of a cascade actor,
// from the deletions view (the rule lives there alone), for the rows of a
// page.
const cascadeSQL = `
SELECT d.uid, d.event_key, coalesce(d.initiated_by, '') AS initiated_by,
       coalesce(d.initiated_via, '') AS initiated_via, d.initiated_at,
       coalesce(d.initiated_api_group, '') AS initiated_api_group, coalesce(d.initiated_resource, '') AS initiated_resource,
       coalesce(d.initiated_namespace, '') AS initiated_namespace, coalesce(d.initiated_name, '') AS initiated_name
FROM deletions d
WHERE d.cluster = $1 AND d.uid = ANY($2::text[]) AND d.event_key = ANY($3::bytea[])`

type cascadeRow struct {
	UID          string     `db:"uid"`
	EventKey     []byte     `db:"event_key"`
	InitiatedBy  string     `db:"initiated_by"`
	InitiatedVia string     `db:"initiated_via"`
	InitiatedAt  *time.Time `db:"initiated_at"`
	Group        string     `db:"initiated_api_group"`
	Resource     string     `db:"initiated_resource"`
	Namespace    string     `db:"initiated_namespace"`
	Name         string     `db:"initiated_name"`
}

// Deletions returns successful deletes, newest first.
func (r *Reader) Deletions(ctx context.Context, q DeletionQuery) ([]Deletion, error) {
	if q.Cluster == "" || q.Limit <= 0 {
		return nil, errors.New("store: deletions: cluster and limit are required")
	}
	// The view joins each version to its event: a delete whose event is
	// gone (its day dropped by retention before the version went) is not
	// one of its rows. Such rows are left out here too, and the page is
	// filled from after them, reading at most maxDeletionRefills pages: a
	// longer run of such rows ends the page (a short page ends the list,
	// as a scan's bound does in history).
	var out []Deletion
	for reads := 0; len(out) < q.Limit && reads < maxDeletionRefills; reads++ {
		page, fetched, err := r.deletionsPage(ctx, q)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(fetched) < q.Limit || len(page) == len(fetched) {
			break
		}
		last := fetched[len(fetched)-1]
		q.After, q.Limit = &Cursor{At: last.ChangedAt, UID: last.UID, Key: last.Key}, q.Limit-len(page)
	}
	return out, nil
}

// maxDeletionRefills bounds the pages Deletions reads to fill one.
const maxDeletionRefills = 10

// deletionsPage reads a page of q and returns the deletions of it with
// their events (who deleted, and who started a cascade), and every row it
// read.
func (r *Reader) deletionsPage(ctx context.Context, q DeletionQuery) ([]Deletion, []deletionRow, error) {
	sql, args := deletionsSQL(q)
	rows, err := queryAll[deletionRow](ctx, r.db, "deletions", sql, args...)
	if err != nil {
		return nil, nil, err
	}
	cascades, missing, err := r.attachActors(ctx, q.Cluster, len(rows), func(i int) (*VersionRecord, []byte) {
		return &rows[i].VersionRecord, rows[i].EventKey
	})
	if err != nil {
		return nil, nil, err
	}
	started, err := r.attachCascades(ctx, q.Cluster, cascades, func(i int) (*VersionRecord, []byte) {
		return &rows[i].VersionRecord, rows[i].EventKey
	})
	if err != nil {
		return nil, nil, err
	}
	for i, at := range started {
		rows[i].InitiatedAt = at
	}
	out := make([]Deletion, 0, len(rows))
	for i := range rows {
		if !missing[i] && rows[i].EventKey != nil {
			out = append(out, rows[i].Deletion)
		}
	}
	return out, rows, nil
}

func deletionsSQL(q DeletionQuery) (string, []any) {
	var b sqlBuilder
	b.versionsCluster = b.arg(q.Cluster)
	b.where("v.cluster = " + b.versionsCluster)
	// The rows of the deletions view: successful deletes (only a
	// successful write makes a version), not the no-op repeat of a change.
	b.where("v.verb IN ('delete', 'deletecollection') AND v.origin = 'change'")
	b.where(`(v.deleted OR v.resource_version IS NULL OR NOT EXISTS (SELECT 1 FROM object_versions d
    WHERE d.cluster = v.cluster AND d.uid = v.uid AND d.resource_version = v.resource_version AND d.origin = 'change'
      AND NOT d.deleted AND (d.changed_at, d.version_key) < (v.changed_at, v.version_key)))`)
	b.where(notSuperseded("v"))
	b.object("v", q.Group, q.Resource, q.Namespace, q.Name)
	if q.NamespacedOnly && q.Namespace == nil {
		b.where("v.namespace <> ''")
	}
	if q.UID != "" {
		b.where("v.uid = " + b.arg(q.UID))
	}
	join := ""
	if q.User != "" {
		// Who deleted is in the event; the same time bounds on its
		// partition key let PostgreSQL prune the days outside them.
		join = "\nJOIN events e ON e.cluster = v.cluster AND e.stage_at = v.changed_at AND e.event_key = v.event_key"
		b.where("e.username = " + b.arg(q.User))
		timeBounds(&b, "e.stage_at", q.Since, q.Until)
	}
	timeBounds(&b, "v.changed_at", q.Since, q.Until)
	keyset(&b, q.After, false, "v.changed_at", "v.uid", "v.version_key")
	return fmt.Sprintf(deletionsSelect, join) + b.whereSQL() + orderBy(false, "v.changed_at", "v.uid", "v.version_key") +
		" LIMIT " + strconv.Itoa(q.Limit), b.args
}

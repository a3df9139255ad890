package tamper

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// eventColumns and versionColumns are every column of events and
// object_versions, in the encoding's fixed order. A json or jsonb column
// (marked "::text") is encoded as the SHA-256 of its text, computed by
// PostgreSQL: the integrator and verify read 32 bytes, not the object.
// TestEncodedColumns fails when a table gains a column this
// list does not have: a new column takes a new encoding version.
var eventColumns = []string{
	"cluster", "event_key", "stage_at", "received_at", "audit_id", "stage", "verb", "request_uri",
	"username", "user_uid", "user_groups", "user_extra::text", "impersonated_user", "impersonated_groups",
	"source_ips", "user_agent", "api_group", "api_version", "resource", "subresource", "namespace",
	"name", "object_uid", "response_code", "response_reason", "response_message", "request_object::text",
	"annotations::text", "rules", "secret_digested", "ingested_at",
}

var versionColumns = []string{
	"cluster", "uid", "version_key", "resource_version", "origin", "verb", "changed_at", "event_key",
	"api_group", "api_version", "kind", "resource", "subresource", "namespace", "name", "created",
	"deleted", "complete", "object::text", "secret_digested", "rules", "object_exact::text",
}

func selectList(alias string, cols []string) string {
	out := make([]string, len(cols))
	for i, c := range cols {
		if name, ok := strings.CutSuffix(c, "::text"); ok {
			out[i] = "sha256(convert_to(" + alias + "." + name + "::text, 'UTF8'))"
			continue
		}
		out[i] = alias + "." + c
	}
	return strings.Join(out, ", ")
}

// The rows of some references (the integrator's), and all rows of a
// cluster (verify's). A version is looked up by its primary key (LATERAL
// ... LIMIT 1, which the planner does not flatten into a join): a hash
// join would scan the whole of object_versions for a pass's keys, and
// spill, as it did on a table not yet analyzed. The events of a pass are
// a range of stage_at, which the join scans once (measured on a bench's
// record, 5,000 events, cached: 50-75 ms, against 100-180 ms for as many
// probes).
var (
	eventsByRefSQL = `SELECT ` + selectList("e", eventColumns) + `
FROM events e JOIN unnest($2::bytea[], $3::timestamptz[]) AS k(key, at)
  ON e.cluster = $1 AND e.event_key = k.key AND e.stage_at = k.at
WHERE e.stage_at BETWEEN $4 AND $5` // redundant bounds: they prune the daily partitions
	versionsByRefSQL = `SELECT ` + selectList("v", versionColumns) + `
FROM unnest($2::text[], $3::bytea[]) AS k(uid, key)
CROSS JOIN LATERAL (SELECT * FROM object_versions v
    WHERE v.cluster = $1 AND v.uid = k.uid AND v.version_key = k.key LIMIT 1) v`
	// eventsPresentSQL returns the references of those events stored:
	// their keys only, no column read or detoasted, over the same
	// partitions as eventsByRefSQL.
	eventsPresentSQL = `SELECT e.event_key, e.stage_at
FROM events e JOIN unnest($2::bytea[], $3::timestamptz[]) AS k(key, at)
  ON e.cluster = $1 AND e.event_key = k.key AND e.stage_at = k.at
WHERE e.stage_at BETWEEN $4 AND $5` // redundant bounds: they prune the daily partitions
	// versionsPresentSQL returns the references of those versions stored.
	versionsPresentSQL = `SELECT k.uid, k.key
FROM unnest($2::text[], $3::bytea[]) AS k(uid, key)
CROSS JOIN LATERAL (SELECT 1 FROM object_versions v
    WHERE v.cluster = $1 AND v.uid = k.uid AND v.version_key = k.key LIMIT 1) v`
	eventsOfClusterSQL   = `SELECT ` + selectList("e", eventColumns) + ` FROM events e WHERE e.cluster = $1`
	versionsOfClusterSQL = `SELECT ` + selectList("v", versionColumns) + ` FROM object_versions v WHERE v.cluster = $1`
)

// rowRef is the reference of a row read by the statements above.
func rowRef(k Kind, vals []any) (Ref, error) {
	var r Ref
	var ok1, ok2, ok3, ok4 bool
	r.Kind = k
	r.Cluster, ok1 = vals[0].(string)
	switch k {
	case KindEvent:
		r.Key, ok2 = vals[1].([]byte)
		r.At, ok3 = vals[2].(time.Time)
		ok4 = true
	case KindVersion:
		r.UID, ok2 = vals[1].(string)
		r.Key, ok3 = vals[2].([]byte)
		r.At, ok4 = vals[6].(time.Time)
	}
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return r, fmt.Errorf("%s: unexpected key columns %T %T %T", k, vals[0], vals[1], vals[2])
	}
	return r, nil
}

// scanRows reads the rows of a statement above, with each one's reference
// and digest.
func scanRows(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, k Kind, sql string, args []any, each func(Ref, [32]byte) error) error {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("read %s: %w", k, err)
	}
	defer rows.Close()
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return fmt.Errorf("read %s: %w", k, err)
		}
		ref, err := rowRef(k, vals)
		if err != nil {
			return err
		}
		d, err := RowDigest(k, vals)
		if err != nil {
			return fmt.Errorf("encode %s: %w", ref, err)
		}
		if err := each(ref, d); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %s: %w", k, err)
	}
	return nil
}

package tamper

import (
	"context"
	"crypto/sha256"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/options-record/options-record/store/model"
)

// micro is t at PostgreSQL's precision.
func micro(t time.Time) time.Time { return time.UnixMicro(t.UnixMicro()) }

func strs(ss []string) any {
	if ss == nil {
		return nil
	}
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func orNil[T comparable](v T) any {
	var zero T
	if v == zero {
		return nil
	}
	return v
}

// text is how the encoding has a json column: the SHA-256 of its text.
func text(b []byte) any {
	if b == nil {
		return nil
	}
	d := sha256.Sum256(b)
	return d[:]
}

// versionValues is what a version written from v stores, in the
// encoding's column order, computed from v without the database.
func versionValues(v *model.Version) []any {
	return []any{v.Cluster, v.UID, v.Key, *v.ResourceVersion, string(v.Origin), v.Verb, micro(v.ChangedAt), v.EventKey,
		v.APIGroup, v.APIVersion, v.Kind, v.Resource, v.Subresource, v.Namespace, v.Name, v.Created,
		v.Deleted, v.Complete, text(v.Object), v.SecretDigested, strs(v.Rules), text(v.ObjectExact)}
}

// eventValues is the same for an event, but for its jsonb columns (which
// PostgreSQL prints its own way: their digests are passed) and ingested_at.
func eventValues(e *model.Event, userExtra, annotations any, ingested time.Time) []any {
	return []any{e.Cluster, e.Key, micro(e.StageAt), micro(e.ReceivedAt), e.AuditID, e.Stage, e.Verb, e.RequestURI,
		e.Username, orNil(e.UserUID), strs(e.UserGroups), userExtra, orNil(e.ImpersonatedUser), strs(e.ImpersonatedGroups),
		strs(e.SourceIPs), orNil(e.UserAgent), e.APIGroup, e.APIVersion, e.Resource, e.Subresource, e.Namespace,
		e.Name, orNil(e.ObjectUID), e.ResponseCode, orNil(e.ResponseReason), orNil(e.ResponseMessage), text(e.RequestObject),
		annotations, strs(e.Rules), e.SecretDigested, micro(ingested)}
}

// TestEncodingRoundTrip writes rows with every hostile string and JSON
// text of the corpus, integrates them (the integrator reads and encodes
// them back), and compares each leaf's digest with the digest of what was
// written, encoded without the database; verify re-reads and re-encodes
// them all again.
func TestEncodingRoundTrip(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	n := max(len(hostile), len(hostileJSON))
	b := e.batch("default", time.Now(), n)
	e.write(b)
	e.integrate()
	digests := map[string][32]byte{}
	rows, err := e.st.Pool().Query(ctx, `SELECT l.row_table, l.uid, l.key, substring(s.digests FROM ((l.log_index - s.first_index) * 32 + 1)::int FOR 32)
		FROM log_leaves l JOIN log_segments s ON s.cluster = l.cluster AND l.log_index >= s.first_index AND l.log_index < s.tree_size`)
	if err != nil {
		t.Fatal(err)
	}
	var tbl, uid string
	var key, d []byte
	if _, err := pgx.ForEachRow(rows, []any{&tbl, &uid, &key, &d}, func() error {
		digests[tbl+"\x00"+uid+"\x00"+string(key)] = [32]byte(d)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(digests) != 2*n {
		t.Fatalf("%d leaves, want %d", len(digests), 2*n)
	}
	for i := range b.Versions {
		v := &b.Versions[i]
		want, err := RowDigest(KindVersion, versionValues(v))
		if err != nil {
			t.Fatal(err)
		}
		if got := digests["object_versions\x00"+v.UID+"\x00"+string(v.Key)]; got != want {
			t.Errorf("version %q (object %q): the stored row's digest is not that of what was written", v.UID, v.Object)
		}
	}
	for i := range b.Events {
		ev := &b.Events[i]
		var ux, an any
		var ingested time.Time
		var uxText, anText []byte
		if err := e.st.Pool().QueryRow(ctx, "SELECT user_extra::text, annotations::text, ingested_at FROM events WHERE event_key = $1",
			ev.Key).Scan(&uxText, &anText, &ingested); err != nil {
			t.Fatal(err)
		}
		ux, an = text(uxText), text(anText)
		want, err := RowDigest(KindEvent, eventValues(ev, ux, an, ingested))
		if err != nil {
			t.Fatal(err)
		}
		if got := digests["events\x00\x00"+string(ev.Key)]; got != want {
			t.Errorf("event %q: the stored row's digest is not that of what was written", ev.AuditID)
		}
	}
	if rep := e.verify(false); !rep.OK() || rep.Clusters[0].Rows != 2*n {
		t.Fatalf("verify: %+v\n%s", rep.Clusters, problems(rep))
	}
}

// TestEncodedColumns: the encoding has every column of the tables it
// logs. A column added to events or object_versions must be added to the
// encoding (with a new encodingVersion), or verify would not see it change.
func TestEncodedColumns(t *testing.T) {
	e := newEnv(t)
	for table, cols := range map[string][]string{"events": eventColumns, "object_versions": versionColumns} {
		rows, err := e.st.Pool().Query(context.Background(),
			"SELECT column_name::text FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 ORDER BY 1", table)
		if err != nil {
			t.Fatal(err)
		}
		have, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		var encoded []string
		for _, c := range cols {
			encoded = append(encoded, strings.TrimSuffix(c, "::text"))
		}
		slices.Sort(encoded)
		if !slices.Equal(have, encoded) {
			t.Errorf("%s has columns %v, the encoding %v", table, have, encoded)
		}
	}
}

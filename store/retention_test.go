package store_test

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/options-record/options-record/internal/pgtest"
	"github.com/options-record/options-record/store"
)

func key(s string) []byte { k := sha256.Sum256([]byte(s)); return k[:] }

func rv(n int64) *int64 { return &n }

// change builds an event and the version it produced.
func change(id, uid string, at time.Time, r int64, deleted bool) ([]store.Event, []store.Version) {
	e := store.Event{Cluster: "c", Key: key(id), StageAt: at, AuditID: id, Stage: "ResponseComplete", Verb: "update",
		RequestURI: "/api/v1/namespaces/ns/configmaps/" + uid, Username: "u", Resource: "configmaps", Namespace: "ns",
		Name: uid, ResponseCode: 200}
	v := store.Version{Cluster: "c", UID: uid, Key: key(id + uid), ResourceVersion: rv(r), Origin: store.OriginChange,
		Verb: "update", ChangedAt: at, EventKey: e.Key, Resource: "configmaps", Namespace: "ns", Name: uid,
		Complete: !deleted, Deleted: deleted, Object: []byte(`{"kind":"ConfigMap"}`)}
	if deleted {
		v.Verb, v.Object, v.ResourceVersion = "delete", nil, nil
	}
	return []store.Event{e}, []store.Version{v}
}

func TestRetentionDropsPartitionsAndKeepsLivePriors(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	old := now.AddDate(0, 0, -40)
	b := &store.Batch{}
	add := func(e []store.Event, v []store.Version) {
		b.Events = append(b.Events, e...)
		b.Versions = append(b.Versions, v...)
	}
	add(change("a1", "live", old, 10, false))   // the newest state of a live object: kept as a prior
	add(change("b1", "edited", old, 11, false)) // superseded by b2: expired
	add(change("b2", "edited", now.Add(-time.Hour), 12, false))
	add(change("c1", "gone", old, 13, false)) // the object was deleted long ago: expired
	add(change("c2", "gone", old.Add(time.Minute), 0, true))
	if _, err := st.WriteBatch(ctx, b); err != nil {
		t.Fatal(err)
	}
	// A retention of zero (no rule known) is refused, not applied as "keep
	// nothing".
	if res, err := st.ApplyRetention(ctx, now, 0); err == nil || len(res.DroppedPartitions) > 0 || res.DeletedVersions > 0 {
		t.Fatalf("retention 0: %+v, %v; want an error and nothing deleted", res, err)
	}
	res, err := st.ApplyRetention(ctx, now, 30*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.DroppedPartitions) != 1 || res.DroppedPartitions[0] != "events_p"+old.Format("20060102") {
		t.Errorf("dropped partitions %v, want the one of %s", res.DroppedPartitions, old.Format("2006-01-02"))
	}
	var left []string
	rows, err := st.Pool().Query(ctx, `SELECT uid || ':' || coalesce(resource_version::text, 'deleted') FROM object_versions ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		left = append(left, s)
	}
	want := []string{"edited:12", "live:10"}
	if len(left) != len(want) || left[0] != want[0] || left[1] != want[1] {
		t.Errorf("versions left %v, want %v", left, want)
	}
	var events int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if events != 1 {
		t.Errorf("events left %d, want the recent one", events)
	}
}

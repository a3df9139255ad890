package store

// Integration tests of the restore API's reads (package store/reads,
// embedded in the Store) and of the restores log, on a real PostgreSQL
// (TestMain in main_test.go): rows written through the Store, read back
// through it. The EXPLAIN tests of each query shape are store/reads' own.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/pgtest"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// change is one recorded change as a test writes it.
type change struct {
	verb, user, resource, ns, name, uid string
	group, impersonated                 string
	rv                                  int64 // 0: unknown
	at                                  time.Duration
	data                                string // data.k of the object after the change; "" with deleted: a Status answer
	created, deleted, incomplete        bool
	code                                int32
	baseline                            bool
	ownerUID                            string
}

func (c change) object() []byte {
	if c.deleted && c.data == "" || c.incomplete {
		return nil
	}
	md := map[string]any{"name": c.name, "uid": c.uid, "resourceVersion": strconv.FormatInt(c.rv, 10)}
	if c.ns != "" {
		md["namespace"] = c.ns
	}
	if c.ownerUID != "" {
		md["ownerReferences"] = []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": c.ownerUID}}
	}
	b, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": map[string]any{"k": c.data}})
	return b
}

func digest(parts ...string) []byte {
	s := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return s[:]
}

// write stores the changes, each as its own event, in one batch.
func write(t *testing.T, s *Store, changes ...change) {
	t.Helper()
	b := batchOf(changes...)
	if err := s.EnsurePartitionsAround(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteBatch(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
}

// batchOf makes the changes a batch, each its own event.
func batchOf(changes ...change) model.Batch {
	var b model.Batch
	for i, c := range changes {
		at := t0.Add(c.at)
		ek := digest("event", c.verb, c.user, c.name, c.uid, at.String(), strconv.Itoa(i))
		code := c.code
		if code == 0 {
			code = 200
		}
		var rv *int64
		if c.rv != 0 {
			rv = &c.rv
		}
		if c.baseline {
			b.Versions = append(b.Versions, model.Version{Cluster: "default", UID: c.uid, Key: digest("baseline", c.uid, at.String()),
				ResourceVersion: rv, Origin: model.OriginBaseline, Verb: "baseline", ChangedAt: at, APIVersion: "v1", Kind: "ConfigMap",
				Resource: c.resource, Namespace: c.ns, Name: c.name, Complete: true, Object: c.object()})
			continue
		}
		b.Events = append(b.Events, model.Event{Cluster: "default", Key: ek, StageAt: at, AuditID: fmt.Sprintf("audit-%d", i),
			Stage: "ResponseComplete", Verb: c.verb, RequestURI: "/api/v1/" + c.resource, Username: c.user,
			UserGroups: []string{"system:authenticated"}, ImpersonatedUser: c.impersonated, APIGroup: c.group, APIVersion: "v1",
			Resource: c.resource, Namespace: c.ns, Name: c.name, ObjectUID: c.uid, ResponseCode: code,
			RequestObject: func() []byte {
				if code >= 300 {
					return []byte(`{"kind":"DeleteOptions"}`)
				}
				return nil
			}()})
		if code >= 300 {
			continue
		}
		b.Versions = append(b.Versions, model.Version{Cluster: "default", UID: c.uid, Key: digest(string(ek), c.uid), ResourceVersion: rv,
			Origin: model.OriginChange, Verb: c.verb, ChangedAt: at, EventKey: ek, APIGroup: c.group, APIVersion: "v1", Kind: "ConfigMap",
			Resource: c.resource, Namespace: c.ns, Name: c.name, Created: c.created, Deleted: c.deleted, Complete: !c.incomplete,
			Object: c.object()})
	}
	return b
}

func openStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// openAPIStore opens the restore API's store on s's database, with the one
// role of the single-process default.
func openAPIStore(t *testing.T, s *Store) *APIStore {
	t.Helper()
	a, err := OpenAPI(context.Background(), Options{URL: s.conn.ConnString()}, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// lifecycle: alice creates prod/app, bob patches it, carol's delete is
// answered by a Status; app is re-created by alice; other objects around.
var lifecycle = []change{
	{verb: "create", user: "alice", resource: "configmaps", ns: "prod", name: "app", uid: "u1", rv: 10, at: 0, data: "v1", created: true},
	{verb: "patch", user: "bob", resource: "configmaps", ns: "prod", name: "app", uid: "u1", rv: 12, at: time.Minute, data: "v2"},
	{verb: "delete", user: "carol", resource: "configmaps", ns: "prod", name: "app", uid: "u1", at: 2 * time.Minute, deleted: true},
	{verb: "create", user: "alice", resource: "configmaps", ns: "prod", name: "app", uid: "u2", rv: 20, at: 3 * time.Minute, data: "v3", created: true},
	{verb: "create", user: "bob", resource: "configmaps", ns: "dev", name: "other", uid: "u3", rv: 11, at: 30 * time.Second, data: "x", created: true},
	{verb: "delete", user: "eve", resource: "secrets", ns: "prod", name: "db", uid: "u4", at: 4 * time.Minute, code: 403},
	{baseline: true, resource: "configmaps", ns: "prod", name: "old", uid: "u5", rv: 5, at: -time.Hour, data: "b"},
	// A deletecollection answered with the objects: the version holds the last state.
	{verb: "deletecollection", user: "system:kube-controller-manager", resource: "configmaps", ns: "dev", name: "other", uid: "u3", rv: 11, at: 5 * time.Minute, data: "x", deleted: true},
}

func summary(vs []VersionRecord) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Verb+" "+v.Namespace+"/"+v.Name+" "+v.UID+" by "+v.Username)
	}
	return out
}

func str(s string) *string { return &s }

func TestChangesFilterAndPage(t *testing.T) {
	s := openStore(t)
	write(t, s, lifecycle...)
	ctx := context.Background()
	tests := []struct {
		name string
		q    ChangeQuery
		want []string
	}{
		{"history by name, oldest first, across incarnations",
			ChangeQuery{Group: str(""), Resource: "configmaps", Namespace: str("prod"), Name: "app", Ascending: true},
			[]string{"create prod/app u1 by alice", "patch prod/app u1 by bob", "delete prod/app u1 by carol", "create prod/app u2 by alice"}},
		{"one incarnation", ChangeQuery{UID: "u1"},
			[]string{"delete prod/app u1 by carol", "patch prod/app u1 by bob", "create prod/app u1 by alice"}},
		{"by user", ChangeQuery{User: "bob"}, []string{"patch prod/app u1 by bob", "create dev/other u3 by bob"}},
		{"by verb and namespace", ChangeQuery{Verb: "create", Namespace: str("prod")},
			[]string{"create prod/app u2 by alice", "create prod/app u1 by alice"}},
		{"time range", ChangeQuery{Since: t0.Add(time.Minute), Until: t0.Add(3 * time.Minute)},
			[]string{"delete prod/app u1 by carol", "patch prod/app u1 by bob"}},
		{"baselines have no user", ChangeQuery{Name: "old"}, []string{"baseline prod/old u5 by "}},
		{"cluster-scoped filter", ChangeQuery{Namespace: str("")}, nil},
		{"other group", ChangeQuery{Group: str("apps")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.q.Cluster, tt.q.Limit = "default", 100
			got, err := s.Changes(ctx, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, summary(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	// Pages of two, newest first, resume exactly after the cursor.
	var all []string
	q := ChangeQuery{Cluster: "default", Limit: 2}
	for i := 0; i < 10; i++ {
		page, err := s.Changes(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, summary(page)...)
		if len(page) < q.Limit {
			break
		}
		l := page[len(page)-1]
		q.After = &Cursor{At: l.ChangedAt, UID: l.UID, Key: l.Key}
	}
	everything, err := s.Changes(ctx, ChangeQuery{Cluster: "default", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(summary(everything), all); diff != "" || len(all) != 7 {
		t.Errorf("paged (%d) differs from one page (-one +paged):\n%s", len(all), diff)
	}
}

// TestBaselineOfARecordedStateIsNotListed: a baseline LIST that raced a
// create's batch stored the state the create recorded; the history shows
// the create only. A baseline of a state no change recorded stays listed.
func TestBaselineOfARecordedStateIsNotListed(t *testing.T) {
	s := openStore(t)
	write(t, s,
		change{verb: "create", user: "alice", resource: "configmaps", ns: "prod", name: "raced", uid: "u6", rv: 30, data: "v1", created: true},
		change{baseline: true, resource: "configmaps", ns: "prod", name: "raced", uid: "u6", rv: 30, at: time.Second, data: "v1"},
		change{verb: "patch", user: "bob", resource: "configmaps", ns: "prod", name: "raced", uid: "u6", rv: 31, at: time.Minute, data: "v2"},
		change{baseline: true, resource: "configmaps", ns: "prod", name: "raced", uid: "u6", rv: 32, at: 2 * time.Minute, data: "v3"},
	)
	got, err := s.Changes(context.Background(), ChangeQuery{Cluster: "default", Name: "raced", Ascending: true, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"create prod/raced u6 by alice", "patch prod/raced u6 by bob", "baseline prod/raced u6 by "}
	if diff := cmp.Diff(want, summary(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestVersionStateBeforeNewest(t *testing.T) {
	s := openStore(t)
	write(t, s, lifecycle...)
	ctx := context.Background()
	hist, err := s.Changes(ctx, ChangeQuery{Cluster: "default", UID: "u1", Ascending: true, Limit: 10})
	if err != nil || len(hist) != 3 {
		t.Fatalf("history: %v %v", summary(hist), err)
	}
	create, patch, del := hist[0], hist[1], hist[2]

	v, err := s.Version(ctx, "default", "u1", patch.Key)
	if err != nil {
		t.Fatal(err)
	}
	if !v.HasState() || !strings.Contains(string(v.Object), `"v2"`) || v.Username != "bob" || *v.ResourceVersion != 12 {
		t.Errorf("version: %+v %s", v, v.Object)
	}
	if _, err := s.Version(ctx, "default", "u1", []byte("nope")); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing version: %v", err)
	}

	for _, tt := range []struct {
		of   VersionRecord
		want string // data of the state before; "absent" for a create
	}{
		{create, "absent"},
		{patch, "v1"},
		{del, "v2"}, // a delete answered by a Status: the newest older state
	} {
		prior, err := s.StateBefore(ctx, &tt.of)
		if err != nil {
			t.Fatalf("state before %s: %v", tt.of.Verb, err)
		}
		got := "absent"
		if prior != nil {
			got = dataOf(t, prior.Object)
		}
		if got != tt.want {
			t.Errorf("state before %s = %s, want %s", tt.of.Verb, got, tt.want)
		}
	}
	// A deletecollection held the last state: it is its own state before.
	dc, err := s.Changes(ctx, ChangeQuery{Cluster: "default", UID: "u3", Verb: "deletecollection", Limit: 1})
	if err != nil || len(dc) != 1 {
		t.Fatalf("deletecollection: %v %v", dc, err)
	}
	prior, err := s.StateBefore(ctx, &dc[0])
	if err != nil || prior == nil || string(prior.Key) != string(dc[0].Key) {
		t.Errorf("state before a deletecollection with the object: %+v %v", prior, err)
	}
	// A baseline's state before is unknown.
	base, _ := s.Changes(ctx, ChangeQuery{Cluster: "default", UID: "u5", Limit: 1})
	if _, err := s.StateBefore(ctx, &base[0]); !errors.Is(err, ErrNotFound) {
		t.Errorf("state before a baseline: %v", err)
	}

	n, err := s.Newest(ctx, "default", "", "configmaps", "prod", "app")
	if err != nil || n.UID != "u2" || dataOf(t, n.Object) != "v3" {
		t.Errorf("newest: %+v %v", n, err)
	}
	if _, err := s.Newest(ctx, "default", "", "configmaps", "prod", "nothing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("newest of nothing: %v", err)
	}
}

func dataOf(t *testing.T, raw []byte) string {
	t.Helper()
	var o struct {
		Data map[string]string `json:"data"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return o.Data["k"]
}

func TestAsOf(t *testing.T) {
	s := openStore(t)
	write(t, s, lifecycle...)
	ctx := context.Background()
	for _, tt := range []struct {
		at   time.Duration
		want []string
	}{
		{-2 * time.Hour, nil},
		{30 * time.Second, []string{"app u1 v1", "old u5 b"}},
		{90 * time.Second, []string{"app u1 v2", "old u5 b"}},
		{150 * time.Second, []string{"old u5 b"}}, // app deleted
		{10 * time.Minute, []string{"app u2 v3", "old u5 b"}},
	} {
		got, err := s.AsOf(ctx, "default", "prod", t0.Add(tt.at))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, v := range got {
			if len(v.Key) == 0 || !v.HasState() {
				t.Errorf("as of %s: %s has no identity or state", tt.at, v.Name)
			}
			names = append(names, v.Name+" "+v.UID+" "+dataOf(t, v.Object))
		}
		if diff := cmp.Diff(tt.want, names); diff != "" {
			t.Errorf("as of %s (-want +got):\n%s", tt.at, diff)
		}
		// The same objects without their bodies, filtered and bounded in
		// the database.
		meta, err := s.ObjectsAsOf(ctx, AsOfQuery{Cluster: "default", Namespace: "prod", At: t0.Add(tt.at), Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(meta) != len(got) {
			t.Errorf("objects as of %s: %d, want %d", tt.at, len(meta), len(got))
		}
		for i := range meta {
			if i < len(got) && (meta[i].UID != got[i].UID || string(meta[i].Key) != string(got[i].Key) || !meta[i].HasState() || meta[i].Object != nil) {
				t.Errorf("objects as of %s: %+v, want %s without its body", tt.at, meta[i], got[i].Name)
			}
		}
		for _, q := range []AsOfQuery{
			{Resources: []GroupResource{{Group: "", Resource: "secrets"}}},
			{Names: []string{"nothing"}},
			{Names: []string{"old"}, Limit: 1},
		} {
			q.Cluster, q.Namespace, q.At = "default", "prod", t0.Add(tt.at)
			if q.Limit == 0 {
				q.Limit = 10
			}
			f, err := s.ObjectsAsOf(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			if q.Names != nil && q.Names[0] == "old" && tt.at > 0 {
				want = 1
			}
			if len(f) != want {
				t.Errorf("objects as of %s with %+v: %d, want %d", tt.at, q, len(f), want)
			}
		}
	}
	grs, err := s.ResourcesIn(ctx, "default", "prod", t0.Add(time.Hour), 10)
	if err != nil || !cmp.Equal(grs, []GroupResource{{Group: "", Resource: "configmaps"}}) {
		t.Errorf("resources in prod: %v, %v", grs, err)
	}
}

func TestDeletionsNameTheStateToRestore(t *testing.T) {
	s := openStore(t)
	write(t, s, lifecycle...)
	ctx := context.Background()
	got, err := s.Deletions(ctx, DeletionQuery{Cluster: "default", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("deletions: %+v", got)
	}
	dc, del := got[0], got[1]
	if dc.Verb != "deletecollection" || string(dc.StateKey) != string(dc.Key) {
		t.Errorf("deletecollection: state key %x, want its own %x", dc.StateKey, dc.Key)
	}
	if del.Username != "carol" || del.StateKey == nil {
		t.Fatalf("delete: %+v", del)
	}
	state, err := s.Version(ctx, "default", del.UID, del.StateKey)
	if err != nil || dataOf(t, state.Object) != "v2" {
		t.Errorf("state to restore after carol's delete: %+v %v", state, err)
	}
	only, err := s.Deletions(ctx, DeletionQuery{Cluster: "default", Namespace: str("prod"), User: "carol", Name: "app", Limit: 10,
		Since: t0, Until: t0.Add(time.Hour)})
	if err != nil || len(only) != 1 {
		t.Errorf("filtered deletions: %v %v", only, err)
	}
	next, err := s.Deletions(ctx, DeletionQuery{Cluster: "default", Limit: 10,
		After: &Cursor{At: dc.ChangedAt, UID: dc.UID, Key: dc.Key}})
	if err != nil || len(next) != 1 || next[0].Username != "carol" {
		t.Errorf("deletions after the cursor: %v %v", next, err)
	}
}

func TestFailedMutationsAndActivity(t *testing.T) {
	s := openStore(t)
	write(t, s, lifecycle...)
	ctx := context.Background()
	failed, err := s.FailedMutations(ctx, EventQuery{Cluster: "default", Limit: 10})
	if err != nil || len(failed) != 1 {
		t.Fatalf("failed mutations: %v %v", failed, err)
	}
	// The list reads no bodies; RequestObjects reads a page's.
	if f := failed[0]; f.Username != "eve" || f.ResponseCode != 403 || f.Resource != "secrets" || len(f.RequestObject) != 0 || len(f.Versions) != 0 {
		t.Errorf("failed mutation: %+v", f)
	}
	if bodies, err := s.RequestObjects(ctx, "default", []EventKey{{At: failed[0].At, Key: failed[0].Key}}, 1<<20); err != nil || len(bodies) != 1 || len(bodies[0]) == 0 {
		t.Errorf("the failed mutation's body: %q %v", bodies, err)
	}
	// One failed mutation by its event's primary key, with its request body;
	// a successful event by its key, or another cluster's, is none.
	f := failed[0]
	one, err := s.FailedMutation(ctx, "default", f.At, f.Key)
	if err != nil || one.Username != "eve" || one.ResponseCode != 403 || string(one.Key) != string(f.Key) || len(one.RequestObject) == 0 {
		t.Errorf("failed mutation by key: %+v %v", one, err)
	}
	for name, lookup := range map[string]func() (*EventRecord, error){
		"another cluster": func() (*EventRecord, error) { return s.FailedMutation(ctx, "other", f.At, f.Key) },
		"another time": func() (*EventRecord, error) {
			return s.FailedMutation(ctx, "default", f.At.Add(time.Microsecond), f.Key)
		},
		"another key": func() (*EventRecord, error) { return s.FailedMutation(ctx, "default", f.At, digest("nothing")) },
	} {
		if e, err := lookup(); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: %+v %v, want not found", name, e, err)
		}
	}
	act, err := s.Activity(ctx, EventQuery{Cluster: "default", User: "alice", Limit: 10})
	if err != nil || len(act) != 2 {
		t.Fatalf("activity: %v %v", act, err)
	}
	if a := act[0]; a.ObjectUID != "u2" || len(a.Versions) != 1 || !strings.HasPrefix(a.Versions[0], "u2/") {
		t.Errorf("alice's newest action: %+v", a)
	}
	if e, err := s.FailedMutation(ctx, "default", act[0].At, act[0].Key); !errors.Is(err, ErrNotFound) {
		t.Errorf("a successful mutation by key: %+v %v, want not found", e, err)
	}
	page, err := s.Activity(ctx, EventQuery{Cluster: "default", User: "alice", Limit: 1,
		After: &Cursor{At: act[0].At, Key: act[0].Key}})
	if err != nil || len(page) != 1 || page[0].ObjectUID != "u1" {
		t.Errorf("activity after the cursor: %v %v", page, err)
	}
	if _, err := s.Activity(ctx, EventQuery{Cluster: "default", Limit: 1}); err == nil {
		t.Error("activity without a user")
	}
}

// TestEventsOfANamespaceAreClusterScoped: the apiserver audits a request
// for a Namespace object in the namespace itself; the reads of events answer
// it as the cluster-scoped object it is, as its versions do.
func TestEventsOfANamespaceAreClusterScoped(t *testing.T) {
	s := openStore(t)
	write(t, s,
		change{verb: "delete", user: "eve", resource: "namespaces", ns: "team", name: "team", uid: "n1", code: 403},
		change{verb: "delete", user: "eve", resource: "configmaps", ns: "team", name: "cm", uid: "c1", at: time.Second, code: 403},
		change{verb: "delete", user: "eve", group: "rbac.authorization.k8s.io", resource: "clusterroles", name: "admin", uid: "r1", at: 2 * time.Second, code: 403},
	)
	ctx := context.Background()
	names := func(q EventQuery) string {
		t.Helper()
		q.Cluster, q.Limit = "default", 10
		rows, err := s.FailedMutations(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range rows {
			out = append(out, e.Namespace+"/"+e.Resource+"/"+e.Name)
		}
		return strings.Join(out, " ")
	}
	if got := names(EventQuery{Namespace: str("team")}); got != "team/configmaps/cm" {
		t.Errorf("in the namespace team: %s", got)
	}
	if got := names(EventQuery{Namespace: str("")}); got != "/clusterroles/admin /namespaces/team" {
		t.Errorf("at the cluster scope: %s", got)
	}
	if got := names(EventQuery{}); got != "/clusterroles/admin team/configmaps/cm /namespaces/team" {
		t.Errorf("everywhere: %s", got)
	}
	all, err := s.FailedMutations(ctx, EventQuery{Cluster: "default", Resource: "namespaces", Limit: 10})
	if err != nil || len(all) != 1 {
		t.Fatalf("the Namespace's: %v %v", all, err)
	}
	if e, err := s.FailedMutation(ctx, "default", all[0].At, all[0].Key); err != nil || e.Namespace != "" || e.Name != "team" {
		t.Errorf("the Namespace's by key: %+v %v", e, err)
	}
}

func TestRestoresLog(t *testing.T) {
	s := openAPIStore(t, openStore(t))
	ctx := context.Background()
	rec, err := s.InsertRestore(ctx, &RestoreRecord{Cluster: "default", Kind: "as-of", Username: "alice", UserGroups: []string{"g"},
		Request: []byte(`{"kind":"as-of"}`), Plan: []byte(`[]`), State: RestorePlanned})
	if err != nil {
		t.Fatal(err)
	}
	if !isUUID(rec.ID) || rec.CreatedAt.IsZero() || rec.State != RestorePlanned {
		t.Fatalf("inserted: %+v", rec)
	}
	got, err := s.Restore(ctx, "default", rec.ID)
	if err != nil || got.Username != "alice" {
		t.Fatalf("read back: %+v %v", got, err)
	}
	if _, err := s.Restore(ctx, "other", rec.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("another cluster's restore: %v", err)
	}
	if _, err := s.Restore(ctx, "default", "'; DROP TABLE restores; --"); !errors.Is(err, ErrNotFound) {
		t.Errorf("not a uuid: %v", err)
	}
	claimed, err := s.ClaimRestore(ctx, "default", rec.ID)
	if err != nil || claimed.State != RestoreRunning || claimed.ExecutedAt == nil {
		t.Fatalf("claim: %+v %v", claimed, err)
	}
	if _, err := s.ClaimRestore(ctx, "default", rec.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("second claim: %v", err)
	}
	if err := s.FinishRestore(ctx, "default", rec.ID, RestorePartial, []byte(`[{"index":0}]`)); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Restore(ctx, "default", rec.ID)
	if got.State != RestorePartial || got.FinishedAt == nil || !strings.Contains(string(got.Outcome), "index") {
		t.Errorf("finished: %+v", got)
	}
}

// cascade: alice deletes namespace prod and the namespace controller then
// deletes what was in it; bob deletes dev/owner and the garbage collector
// then deletes its dependent.
var cascade = append(slices.Clone(lifecycle),
	change{verb: "create", user: "alice", resource: "configmaps", ns: "prod", name: "app2", uid: "c1", rv: 30, at: 10 * time.Minute, data: "a", created: true},
	change{verb: "create", user: "bob", resource: "configmaps", ns: "dev", name: "owner", uid: "o1", rv: 40, at: 10 * time.Minute, data: "o", created: true},
	change{verb: "create", user: "bob", resource: "configmaps", ns: "dev", name: "dep", uid: "d1", rv: 41, at: 11 * time.Minute, data: "d", created: true, ownerUID: "o1"},
	change{verb: "delete", user: "alice", resource: "namespaces", name: "prod", uid: "ns1", at: 20 * time.Minute, deleted: true},
	change{verb: "delete", user: "system:serviceaccount:kube-system:namespace-controller", resource: "configmaps", ns: "prod", name: "app2", uid: "c1", at: 21 * time.Minute, deleted: true},
	change{verb: "delete", user: "bob", resource: "configmaps", ns: "dev", name: "owner", uid: "o1", rv: 40, at: 22 * time.Minute, data: "o", deleted: true},
	change{verb: "delete", user: "system:serviceaccount:kube-system:generic-garbage-collector", resource: "configmaps", ns: "dev", name: "dep", uid: "d1", at: 23 * time.Minute, deleted: true},
)

// TestDeletionsAgreeWithTheView: Deletions reads object_versions and the
// events apart (store/reads/actors.go); every row, actor and cascade must be what the
// deletions view says, the rule operators query with SQL.
func TestDeletionsAgreeWithTheView(t *testing.T) {
	s := openStore(t)
	write(t, s, cascade...)
	ctx := context.Background()
	type row struct {
		UID, Key, User, AuditID, By, Via, StateKey string
		At                                         *time.Time
		Stale                                      bool
		Groups                                     []string
	}
	compare := func(t *testing.T) []row {
		t.Helper()
		rows, err := s.pool.Query(ctx, `
SELECT d.uid, encode(v.version_key, 'hex'), d.username, d.audit_id, coalesce(d.initiated_by, ''), coalesce(d.initiated_via, ''),
       coalesce(encode(CASE WHEN v.object IS NOT NULL THEN v.version_key ELSE p.version_key END, 'hex'), ''),
       d.initiated_at, d.prior_stale, d.user_groups
FROM deletions d
JOIN object_versions v ON v.cluster = d.cluster AND v.uid = d.uid AND v.event_key = d.event_key
LEFT JOIN LATERAL (
    SELECT pv.version_key FROM object_versions pv
    WHERE pv.cluster = d.cluster AND pv.uid = d.uid AND pv.complete AND NOT pv.deleted
      AND pv.resource_version = d.prior_resource_version
    ORDER BY pv.changed_at DESC LIMIT 1
) p ON d.prior_known
WHERE d.cluster = 'default'
ORDER BY d.changed_at DESC, d.uid DESC, v.version_key DESC`)
		if err != nil {
			t.Fatal(err)
		}
		want, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var x row
			err := r.Scan(&x.UID, &x.Key, &x.User, &x.AuditID, &x.By, &x.Via, &x.StateKey, &x.At, &x.Stale, &x.Groups)
			return x, err
		})
		if err != nil {
			t.Fatal(err)
		}
		var got []row
		var after *Cursor
		for { // pages of 2: the keyset continues where the view's order does
			page, err := s.Deletions(ctx, DeletionQuery{Cluster: "default", Limit: 2, After: after})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range page {
				got = append(got, row{UID: d.UID, Key: hex.EncodeToString(d.Key), User: d.Username, AuditID: d.AuditID, By: d.InitiatedBy,
					Via: d.InitiatedVia, StateKey: hex.EncodeToString(d.StateKey), At: d.InitiatedAt, Stale: d.Stale, Groups: d.UserGroups})
			}
			if len(page) < 2 {
				break
			}
			last := page[len(page)-1]
			after = &Cursor{At: last.ChangedAt, UID: last.UID, Key: last.Key}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Deletions against the view (-view +Deletions):\n%s", diff)
		}
		return got
	}
	got := compare(t)
	byUID := map[string]row{}
	for _, r := range got {
		byUID[r.UID] = r
	}
	if r := byUID["c1"]; r.By != "alice" || r.Via != "namespace-deletion" || r.At == nil {
		t.Errorf("the namespace controller's delete of prod/app2: %+v, want started by alice's namespace deletion", r)
	}
	if r := byUID["d1"]; r.By != "bob" || r.Via != "owner-deletion" {
		t.Errorf("the garbage collector's delete of dev/dep: %+v, want started by bob's delete of its owner", r)
	}
	if len(got) < 6 {
		t.Errorf("the fixture has %d deletions, want at least 6", len(got))
	}
	// A delete whose event is gone (retention dropped its day first) is
	// not a row of the view, nor of Deletions; the pages fill from after it.
	if _, err := s.pool.Exec(ctx, `DELETE FROM events WHERE username IN ('carol', 'system:kube-controller-manager')`); err != nil {
		t.Fatal(err)
	}
	if after := compare(t); len(after) != len(got)-2 {
		t.Errorf("%d deletions once two events are gone, want %d", len(after), len(got)-2)
	}
}

// TestChangesByNameInAnyGroup: an object named without its group is found in
// every group recorded in the namespace (the query lists the groups by a
// skip scan), and only there.
func TestChangesByNameInAnyGroup(t *testing.T) {
	s := openStore(t)
	write(t, s,
		change{verb: "create", user: "alice", resource: "widgets", group: "a.example", ns: "prod", name: "w", uid: "g1", rv: 10, data: "a", created: true},
		change{verb: "create", user: "alice", resource: "widgets", group: "b.example", ns: "prod", name: "w", uid: "g2", rv: 11, at: time.Second, data: "b", created: true},
		change{verb: "create", user: "alice", resource: "widgets", group: "c.example", ns: "dev", name: "w", uid: "g3", rv: 12, at: 2 * time.Second, data: "c", created: true},
		change{verb: "create", user: "alice", resource: "widgets", group: "a.example", ns: "prod", name: "other", uid: "g4", rv: 13, at: 3 * time.Second, data: "d", created: true},
	)
	got, err := s.Changes(context.Background(), ChangeQuery{Cluster: "default", Resource: "widgets", Namespace: str("prod"), Name: "w", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var uids []string
	for _, v := range got {
		uids = append(uids, v.UID)
	}
	if !cmp.Equal(uids, []string{"g2", "g1"}) {
		t.Errorf("prod/w in any group: %v, want g2, g1", uids)
	}
	if len(got) > 0 && got[0].Username != "alice" {
		t.Errorf("author of %s: %q, want alice", got[0].UID, got[0].Username)
	}
}

func TestObjectsLoadsABatchOfStates(t *testing.T) {
	s := openStore(t)
	write(t, s, lifecycle...)
	ctx := context.Background()
	vs, err := s.Changes(ctx, ChangeQuery{Cluster: "default", UID: "u1", Limit: 10, Ascending: true})
	if err != nil || len(vs) != 3 {
		t.Fatalf("u1's versions: %v %v", vs, err)
	}
	var uids []string
	var keys [][]byte
	for _, v := range vs {
		uids, keys = append(uids, v.UID), append(keys, v.Key)
	}
	uids, keys = append(uids, "nope"), append(keys, []byte{1})
	objs, err := s.Objects(ctx, "default", uids, keys)
	if err != nil {
		t.Fatal(err)
	}
	// create (v1), patch (v2); the delete was answered by a Status.
	if len(objs) != 2 || dataOf(t, objs[ObjectID("u1", vs[0].Key)]) != "v1" || dataOf(t, objs[ObjectID("u1", vs[1].Key)]) != "v2" {
		t.Errorf("objects: %d, %q", len(objs), objs)
	}
	if other, err := s.Objects(ctx, "elsewhere", uids, keys); err != nil || len(other) != 0 {
		t.Errorf("objects of another cluster: %v %v", other, err)
	}
}

// TestNamedRestoresAreUniqueInTheirScope: a restore created as an object is
// named within its namespace, and a cluster restore within the cluster
// scope ("" rather than NULL, which would make every name unique).
func TestNamedRestoresAreUniqueInTheirScope(t *testing.T) {
	s := openAPIStore(t, openStore(t))
	ctx := context.Background()
	namedBy := func(user, ns, name string) error {
		_, err := s.InsertRestore(ctx, &RestoreRecord{Cluster: "default", Kind: "version", Username: user, Request: []byte(`{}`),
			Plan: []byte(`[]`), State: "succeeded", ObjectNamespace: ns, ObjectName: name})
		return err
	}
	named := func(ns, name string) error { return namedBy("alice", ns, name) }
	for _, r := range []struct{ ns, name string }{{"", "back"}, {"shop", "back"}, {"other", "back"}} {
		if err := named(r.ns, r.name); err != nil {
			t.Fatalf("restore %q/%q: %v", r.ns, r.name, err)
		}
	}
	for _, ns := range []string{"", "shop"} {
		if err := named(ns, "back"); !errors.Is(err, ErrExists) {
			t.Errorf("a second restore %q in %q: %v, want ErrExists", "back", ns, err)
		}
	}
	if r, err := s.RestoreNamed(ctx, "default", "alice", "", "", "back"); err != nil || r.ObjectNamespace != "" || r.ObjectName != "back" {
		t.Errorf("the cluster restore by name: %+v %v", r, err)
	}
	// Names are each user's own: bob's "back" neither collides with
	// alice's nor is found as hers.
	for _, ns := range []string{"", "shop"} {
		if err := namedBy("bob", ns, "back"); err != nil {
			t.Errorf("bob's restore %q in %q: %v", "back", ns, err)
		}
	}
	if _, err := s.RestoreNamed(ctx, "default", "carol", "", "shop", "back"); !errors.Is(err, ErrNotFound) {
		t.Errorf("carol's restore named back: %v, want ErrNotFound", err)
	}
	if r, err := s.RestoreNamed(ctx, "default", "bob", "", "shop", "back"); err != nil || r.Username != "bob" {
		t.Errorf("bob's restore named back: %+v %v", r, err)
	}
	cluster := ""
	if rs, err := s.NamedRestores(ctx, NamedRestoreQuery{Cluster: "default", Username: "alice", Namespace: &cluster, Limit: 10}); err != nil || len(rs) != 1 {
		t.Errorf("cluster restores: %d %v, want 1", len(rs), err)
	}
	if rs, err := s.NamedRestores(ctx, NamedRestoreQuery{Cluster: "default", Username: "alice", Limit: 10}); err != nil || len(rs) != 3 {
		t.Errorf("every named restore: %d %v, want 3", len(rs), err)
	}
}

// TestChangesNameWhoStartedACascade: a delete by the namespace controller
// or the garbage collector, listed as a change, names the user whose
// namespace or owner deletion started it (as the deletions view does); no
// other change does.
func TestChangesNameWhoStartedACascade(t *testing.T) {
	s := openStore(t)
	write(t, s, cascade...)
	ctx := context.Background()
	got := map[string]string{}
	for _, ns := range []string{"prod", "dev"} {
		vs, err := s.Changes(ctx, ChangeQuery{Cluster: "default", Namespace: str(ns), Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			if v.InitiatedBy != "" || v.InitiatedVia != "" {
				got[v.UID+" "+v.Verb] = v.InitiatedBy + " " + v.InitiatedVia
			}
		}
	}
	want := map[string]string{"c1 delete": "alice namespace-deletion", "d1 delete": "bob owner-deletion"}
	if !cmp.Equal(got, want) {
		t.Errorf("cascade initiators among changes: %v, want %v", got, want)
	}
	v, err := s.Newest(ctx, "default", "", "configmaps", "dev", "dep")
	if err != nil || v.InitiatedBy != "bob" {
		t.Errorf("the newest version of dev/dep (the garbage collector's delete): %+v %v", v, err)
	}
}

// TestChangesOfACascadeActorNameWhoStartedIt: the changes of the garbage
// collector (a filter by user) name who started each of its deletes.
func TestChangesOfACascadeActorNameWhoStartedIt(t *testing.T) {
	s := openStore(t)
	write(t, s, cascade...)
	vs, err := s.Changes(context.Background(), ChangeQuery{Cluster: "default", User: "system:serviceaccount:kube-system:generic-garbage-collector", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 || vs[0].UID != "d1" || vs[0].InitiatedBy != "bob" || vs[0].InitiatedVia != "owner-deletion" || vs[0].Initiator == nil ||
		vs[0].Initiator.Name != "owner" || vs[0].Initiator.Namespace != "dev" {
		t.Fatalf("the garbage collector's changes: %+v", vs)
	}
	if vs, err := s.Changes(context.Background(), ChangeQuery{Cluster: "default", User: "bob", Limit: 10}); err != nil || len(vs) == 0 || vs[0].InitiatedBy != "" {
		t.Errorf("bob's changes: %+v %v", vs, err)
	}
}

// TestAnOwnerIsOnlyInItsDependentsNamespace: a dependent whose
// ownerReference names the uid of an object of another namespace is
// deleted by the garbage collector; that does not make the other object's
// deleter the author of its cascade (it would tell a reader of the
// dependent who deleted an object they may not see).
func TestAnOwnerIsOnlyInItsDependentsNamespace(t *testing.T) {
	s := openStore(t)
	write(t, s,
		change{verb: "create", user: "vault-admin", resource: "configmaps", ns: "vault", name: "owner", uid: "v1", rv: 10, data: "s", created: true},
		change{verb: "create", user: "mallory", resource: "configmaps", ns: "mal", name: "bait", uid: "m1", rv: 11, at: time.Second, data: "b", created: true, ownerUID: "v1"},
		change{verb: "delete", user: "carol", resource: "configmaps", ns: "vault", name: "owner", uid: "v1", rv: 10, at: 2 * time.Second, data: "s", deleted: true},
		change{verb: "delete", user: "system:serviceaccount:kube-system:generic-garbage-collector", resource: "configmaps", ns: "mal", name: "bait", uid: "m1", at: 3 * time.Second, deleted: true},
	)
	ds, err := s.Deletions(context.Background(), DeletionQuery{Cluster: "default", Namespace: str("mal"), Limit: 10})
	if err != nil || len(ds) != 1 {
		t.Fatalf("deletions in mal: %+v %v", ds, err)
	}
	if ds[0].InitiatedBy != "" || ds[0].InitiatedVia != "" {
		t.Errorf("the garbage collector's delete of mal/bait is credited to %q via %q: its owner reference names an object of vault", ds[0].InitiatedBy, ds[0].InitiatedVia)
	}
}

// TestNamespacedOnlyLeavesOutTheClusterScope: a namespaced list across all
// namespaces (kubectl get deletions -A) reads no cluster-scoped row, so
// none takes a place of its page.
func TestNamespacedOnlyLeavesOutTheClusterScope(t *testing.T) {
	s := openStore(t)
	write(t, s, append(slices.Clone(lifecycle),
		change{verb: "create", user: "mallory", resource: "configmaps", name: "cluster-thing", uid: "c1", rv: 30, at: 6 * time.Minute, data: "c", created: true},
		change{verb: "delete", user: "mallory", resource: "configmaps", name: "cluster-thing", uid: "c1", at: 7 * time.Minute, deleted: true},
		change{verb: "delete", user: "mallory", resource: "configmaps", name: "denied", uid: "c2", at: 8 * time.Minute, code: 403},
	)...)
	ctx := context.Background()
	for _, only := range []bool{false, true} {
		ch, err := s.Changes(ctx, ChangeQuery{Cluster: "default", NamespacedOnly: only, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		dels, err := s.Deletions(ctx, DeletionQuery{Cluster: "default", NamespacedOnly: only, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		failed, err := s.FailedMutations(ctx, EventQuery{Cluster: "default", NamespacedOnly: only, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		cluster := 0
		for _, v := range ch {
			if v.Namespace == "" {
				cluster++
			}
		}
		for _, d := range dels {
			if d.Namespace == "" {
				cluster++
			}
		}
		for _, e := range failed {
			if e.Namespace == "" {
				cluster++
			}
		}
		if only && cluster != 0 || !only && cluster != 4 {
			t.Errorf("NamespacedOnly %v: %d cluster-scoped rows among changes, deletions and failed mutations", only, cluster)
		}
	}
}

// TestAsOfListsOneObjectPerName: an object whose delete the record missed
// (a rule left it out) is not listed beside the object made again under
// its name: as of a time after the second one's creation, the name is the
// second object's, in Go's queries and in the SQL function alike.
func TestAsOfListsOneObjectPerName(t *testing.T) {
	s := openStore(t)
	write(t, s,
		change{verb: "create", user: "alice", resource: "configmaps", ns: "prod", name: "x", uid: "a", rv: 10, at: 0, data: "first", created: true},
		change{verb: "create", user: "alice", resource: "configmaps", ns: "prod", name: "x", uid: "b", rv: 20, at: time.Hour, data: "second", created: true},
	)
	ctx := context.Background()
	for _, tt := range []struct {
		at   time.Duration
		want string
	}{{30 * time.Minute, "a"}, {2 * time.Hour, "b"}} {
		var uids []string
		got, err := s.AsOf(ctx, "default", "prod", t0.Add(tt.at))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range got {
			uids = append(uids, v.UID)
		}
		meta, err := s.ObjectsAsOf(ctx, AsOfQuery{Cluster: "default", Namespace: "prod", At: t0.Add(tt.at), Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range meta {
			uids = append(uids, v.UID)
		}
		rows, err := s.Pool().Query(ctx, `SELECT uid FROM objects_as_of('default', 'prod', $1)`, t0.Add(tt.at))
		if err != nil {
			t.Fatal(err)
		}
		sqlUIDs, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		uids = append(uids, sqlUIDs...)
		if want := []string{tt.want, tt.want, tt.want}; !slices.Equal(uids, want) {
			t.Errorf("as of %s: %v (AsOf, ObjectsAsOf, objects_as_of), want %v", tt.at, uids, want)
		}
	}
}

// TestNewestGoesByResourceVersion: two apiservers' clocks disagree by a few
// milliseconds; the newest version of an object is the one of its highest
// resourceVersion, not the one stamped last (else a restore's guard sees a
// change that is not there).
func TestNewestGoesByResourceVersion(t *testing.T) {
	s := openStore(t)
	write(t, s,
		change{verb: "create", user: "alice", resource: "configmaps", ns: "prod", name: "x", uid: "a", rv: 99, at: 0, data: "v0", created: true},
		change{verb: "update", user: "alice", resource: "configmaps", ns: "prod", name: "x", uid: "a", rv: 101, at: time.Second + 3*time.Millisecond, data: "v2"},
		change{verb: "update", user: "bob", resource: "configmaps", ns: "prod", name: "x", uid: "a", rv: 100, at: time.Second + 5*time.Millisecond, data: "v1"},
	)
	n, err := s.Newest(context.Background(), "default", "", "configmaps", "prod", "x")
	if err != nil || n.ResourceVersion == nil || *n.ResourceVersion != 101 {
		t.Errorf("newest: %+v %v; want resourceVersion 101", n, err)
	}
}

// TestVersionsByKeyRange reads the candidates of a short name: the
// versions whose key lies in a range, with their authors, in key order.
func TestVersionsByKeyRange(t *testing.T) {
	s := openStore(t)
	write(t, s, lifecycle...)
	ctx := context.Background()
	hist, err := s.Changes(ctx, ChangeQuery{Cluster: "default", UID: "u1", Ascending: true, Limit: 10})
	if err != nil || len(hist) != 3 {
		t.Fatalf("history: %v %v", summary(hist), err)
	}
	patch := hist[1]
	hi := append(append([]byte{}, patch.Key[:2]...), bytes.Repeat([]byte{0xff}, 30)...)
	got, err := s.VersionsByKeyRange(ctx, KeyRangeQuery{Cluster: "default", Lo: patch.Key[:2], Hi: hi, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !bytes.Equal(got[0].Key, patch.Key) || got[0].Username != "bob" || got[0].Name != patch.Name {
		t.Errorf("versions by key %x..: %v", patch.Key[:2], summary(got))
	}
	if got, err := s.VersionsByKeyRange(ctx, KeyRangeQuery{Cluster: "other", Lo: patch.Key[:2], Hi: hi, Limit: 10}); err != nil || len(got) != 0 {
		t.Errorf("another cluster's versions: %v %v", summary(got), err)
	}
	lo, top := []byte{}, bytes.Repeat([]byte{0xff}, 32)
	all, err := s.VersionsByKeyRange(ctx, KeyRangeQuery{Cluster: "default", Lo: lo, Hi: top, Limit: 2})
	if err != nil || len(all) != 2 || bytes.Compare(all[0].Key, all[1].Key) > 0 {
		t.Errorf("limit 2, in key order: %v %v", summary(all), err)
	}
	// The scope of a short name, selected by the store: a namespace,
	// deletes only, an object name as it reads in a short name.
	prod, dev := "prod", "dev"
	for _, c := range []struct {
		q    KeyRangeQuery
		want []string
	}{
		{KeyRangeQuery{Namespace: &dev}, []string{"create dev/other u3 by bob", "deletecollection dev/other u3 by system:kube-controller-manager"}},
		{KeyRangeQuery{Namespace: &prod, Deleted: true}, []string{"delete prod/app u1 by carol"}},
		{KeyRangeQuery{Readable: "other"}, []string{"create dev/other u3 by bob", "deletecollection dev/other u3 by system:kube-controller-manager"}},
		{KeyRangeQuery{Readable: "oth"}, nil},
		{KeyRangeQuery{Readable: "old", Namespace: &dev}, nil},
	} {
		c.q.Cluster, c.q.Lo, c.q.Hi, c.q.Limit = "default", lo, top, 100
		got, err := s.VersionsByKeyRange(ctx, c.q)
		s := summary(got)
		sort.Strings(s)
		if err != nil || strings.Join(s, "; ") != strings.Join(c.want, "; ") {
			t.Errorf("%+v: %v %v, want %v", c.q, s, err, c.want)
		}
	}
}

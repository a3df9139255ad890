package reads_test

import (
	"context"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/options-record/options-record/api/shortname"
	"github.com/options-record/options-record/store/pgtest"
	"github.com/options-record/options-record/store/reads"
)

// TestReadQueriesUseIndexes runs EXPLAIN on every shape of the API's list
// queries with sequential scans disabled: a sequential scan left means no
// index serves the shape.
func TestReadQueriesUseIndexes(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	if err := s.EnsurePartitionsAround(ctx, t0); err != nil {
		t.Fatal(err)
	}
	seed, err := os.ReadFile("../testdata/plan-seed.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, string(seed)); err != nil {
		t.Fatalf("seed: %v", err)
	}
	conn, err := s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	cur := &reads.Cursor{At: t0, UID: "u", Key: []byte{1}}
	shapes := map[string]func() (string, []any){
		"changes: cluster, time": func() (string, []any) {
			return reads.ChangesSQL(reads.ChangeQuery{Cluster: "c", Since: t0, Limit: 10, After: cur})
		},
		"changes: uid": func() (string, []any) {
			return reads.ChangesSQL(reads.ChangeQuery{Cluster: "c", UID: "u", Limit: 10, Ascending: true})
		},
		"changes: by name": func() (string, []any) {
			return reads.ChangesSQL(reads.ChangeQuery{Cluster: "c", Group: str(""), Resource: "r", Namespace: str("n"), Name: "x", Limit: 10})
		},
		"changes: by name, any group": func() (string, []any) {
			return reads.ChangesSQL(reads.ChangeQuery{Cluster: "c", Resource: "r", Namespace: str("n"), Name: "x", Limit: 10})
		},
		"changes: namespace": func() (string, []any) {
			return reads.ChangesSQL(reads.ChangeQuery{Cluster: "c", Namespace: str("n"), Limit: 10})
		},
		"changes: user": func() (string, []any) {
			return reads.ChangesSQL(reads.ChangeQuery{Cluster: "c", User: "bob", Since: t0, Limit: 10})
		},
		"deletions: cluster": func() (string, []any) {
			return reads.DeletionsSQL(reads.DeletionQuery{Cluster: "c", Limit: 10, After: cur})
		},
		"deletions: namespace, name": func() (string, []any) {
			return reads.DeletionsSQL(reads.DeletionQuery{Cluster: "c", Namespace: str("n"), Name: "x", Limit: 10})
		},
		"failed mutations": func() (string, []any) {
			return reads.EventsSQL(reads.EventQuery{Cluster: "c", Since: t0, Limit: 10}, true)
		},
		"activity": func() (string, []any) {
			return reads.EventsSQL(reads.EventQuery{Cluster: "c", User: "bob", Limit: 10, After: cur}, false)
		},
		"authors of versions": func() (string, []any) {
			return reads.EventActorSQL, []any{"c", []time.Time{t0, t0.Add(time.Minute)}, [][]byte{{1}, {2}}}
		},
		"cascades of deletions": func() (string, []any) { return reads.CascadeSQL, []any{"c", []string{"u", "w"}, [][]byte{{1}, {2}}} },
		"deletions: user": func() (string, []any) {
			return reads.DeletionsSQL(reads.DeletionQuery{Cluster: "c", User: "bob", Since: t0, Limit: 10})
		},
		"failed mutations: namespace": func() (string, []any) {
			return reads.EventsSQL(reads.EventQuery{Cluster: "c", Namespace: str("n"), Since: t0, Limit: 10}, true)
		},
		"failed mutations: cluster scope": func() (string, []any) {
			return reads.EventsSQL(reads.EventQuery{Cluster: "c", Namespace: str(""), Limit: 10, After: cur}, true)
		},
		"failed mutation": func() (string, []any) { return reads.FailedMutationSQL, []any{"c", t0, []byte{1}} },
		"version":         func() (string, []any) { return reads.VersionByKeySQL, []any{"c", "u", []byte{1}} },
		"state before":    func() (string, []any) { return reads.StateBeforeSQL, []any{"c", "u", []byte{1}, int64(5), false} },
		"newest by name":  func() (string, []any) { return reads.NewestByNameSQL, []any{"c", "", "r", "n", "x"} },
		"as of":           func() (string, []any) { return reads.AsOfSQL, []any{"c", "n", t0} },
		"objects as of: resources, names": func() (string, []any) {
			return reads.AsOfMetaSQL(reads.AsOfQuery{Cluster: "c", Namespace: "n", At: t0, Resources: []reads.GroupResource{{Group: "", Resource: "r"}}, Names: []string{"x"}, Limit: 10})
		},
		"undo: a user's changes in namespaces and resources": func() (string, []any) {
			return reads.ChangesSQL(reads.ChangeQuery{Cluster: "c", User: "bob", Since: t0, Until: t0.Add(time.Hour), Ascending: true, Limit: 500,
				Namespaces: []string{"n"}, Resources: []reads.GroupResource{{Group: "", Resource: "r"}}, ChangesOnly: true})
		},
	}
	for name, shape := range shapes {
		t.Run(name, func(t *testing.T) {
			q, args := shape()
			var plan []byte
			if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+q, args...).Scan(&plan); err != nil {
				t.Fatalf("explain: %v\n%s", err, q)
			}
			for _, p := range pgtest.PlanProblems(plan) {
				t.Errorf("%s\n%s", p, plan)
			}
		})
	}
}

// TestShortNameLookupBoundsTheKey checks that resolving a short name reads
// the versions of its key range from an index whose condition bounds the
// key: an index scan bounded by the cluster alone (the primary key, which
// leads with the uid) would read every version of the cluster.
func TestShortNameLookupBoundsTheKey(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	conn, err := s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	shop := "shop"
	for _, args := range [][]any{
		{"c", []byte{0x3f, 0x9a}, []byte{0x3f, 0x9a, 0xff}, nil, false, "", 101},
		{"c", []byte{0x3f, 0x9a}, []byte{0x3f, 0x9a, 0xff}, &shop, true, "app-config", 101},
	} {
		var plan []byte
		if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+reads.VersionsByKeySQL, args...).Scan(&plan); err != nil {
			t.Fatalf("explain: %v", err)
		}
		for _, p := range pgtest.PlanProblems(plan) {
			t.Errorf("%s\n%s", p, plan)
		}
		if !regexp.MustCompile(`"Index Cond": "[^"]*version_key >=`).Match(plan) {
			t.Errorf("no index condition bounds version_key:\n%s", plan)
		}
	}
	// An attempt's short name: the failed events of a key range, from
	// each partition's events_failed_key.
	for _, args := range [][]any{
		{"c", []byte{0x3f, 0x9a}, []byte{0x3f, 0x9a, 0xff}, nil, "", 101},
		{"c", []byte{0x3f, 0x9a}, []byte{0x3f, 0x9a, 0xff}, &shop, "app-config", 101},
	} {
		var plan []byte
		if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+reads.FailedByKeySQL, args...).Scan(&plan); err != nil {
			t.Fatalf("explain: %v", err)
		}
		for _, p := range pgtest.PlanProblems(plan) {
			t.Errorf("%s\n%s", p, plan)
		}
		if !regexp.MustCompile(`"Index Name": "events_p[0-9]+_[a-z_]*idx"[^}]*"Index Cond": "[^"]*event_key >=`).Match(plan) {
			t.Errorf("no index of failed events bounds event_key:\n%s", plan)
		}
	}
}

// TestReadableNameSQL: the store selects a short name's candidates by the
// readable part of their object's name computed in SQL, which must be
// shortname.Readable exactly, or a short name would not find its version.
func TestReadableNameSQL(t *testing.T) {
	s := openStore(t)
	names := []string{"app-config", "App.Config", "kube-root-ca.crt", "system:controller:job-controller",
		"a-very-long-deployment-name-for-payments", "abcdefghijklmnopqrs-tuv", "abcdefghijklmnopqr-stu",
		"abcdefghijklmnopqrstu", "ABCDEFGHIJKLMNOPQRS.TUV", "...", "", "-", "a__b--c..", "__x__",
		"\u00dcn\u00efcode\u202eevil\x1b[31m", "\u212aelvin-\u0130stanbul", "\u0131i\u017f\u00df\uff21\u01c5",
		"\u00e9t\u00e9-2026", "\u3164app\u3164config\u00a0", "caf\u00c9", "x\u200by", "\U0001f600emoji\U0001f600",
		"0123456789012345678-9", "012345678901234567-89", "-leading-and-trailing-"}
	for _, c := range []struct{ sql, alias string }{{reads.ReadableNameSQL, "v"}, {reads.ReadableEventSQL, "e"}} {
		var got []string
		err := s.Pool().QueryRow(context.Background(), `SELECT array_agg(`+c.sql+` ORDER BY i)
FROM unnest($1::text[]) WITH ORDINALITY AS `+c.alias+`(name, i)`, names).Scan(&got)
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range names {
			if want := shortname.Readable(n); got[i] != want {
				t.Errorf("readable(%q) in SQL (%s.name) = %q, shortname.Readable = %q", n, c.alias, got[i], want)
			}
		}
	}
}

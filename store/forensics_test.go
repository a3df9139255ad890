package store_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/pgtest"
)

// TestForensicQueriesUseIndexes runs EXPLAIN on every query the README
// documents (testdata/forensics, included in the README) with sequential
// scans disabled, and fails if a table of the record is still scanned
// sequentially: then no index can serve the query.
func TestForensicQueriesUseIndexes(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.EnsurePartitionsAround(ctx, time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	seed, err := os.ReadFile("testdata/plan-seed.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, string(seed)); err != nil {
		t.Fatalf("seed: %v", err)
	}
	files, err := filepath.Glob("testdata/forensics/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no forensic queries found: %v", err)
	}
	conn, err := st.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			q, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var plan []byte
			if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+string(q)).Scan(&plan); err != nil {
				t.Fatalf("explain: %v", err)
			}
			for _, p := range pgtest.PlanProblems(plan) {
				t.Errorf("%s\n%s", p, plan)
			}
		})
	}
}

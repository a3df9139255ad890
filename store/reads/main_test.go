package reads_test

// The tests here check the SQL of each query shape (EXPLAIN). What the
// reads answer is tested in package store (reads_test.go), through the
// Store that embeds the Reader and writes the rows they read.

import (
	"context"
	"testing"
	"time"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func openStore(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func str(s string) *string { return &s }

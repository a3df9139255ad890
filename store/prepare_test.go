package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/pgtest"
)

// TestNothingBeforePrepare: a store made by Connect answers a retryable
// ErrNotPrepared (a journal keeps the batch) and touches nothing until
// Prepare has applied the migrations; then it writes. A Secondary store on
// the prepared database is usable at once.
func TestNothingBeforePrepare(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	st, err := store.Connect(store.Options{URL: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b := &model.Batch{}
	b.Events, b.Versions = change("before", "obj", time.Now(), 7, false)

	_, err = st.WriteBatch(ctx, b)
	if !errors.Is(err, store.ErrNotPrepared) || !store.IsRetryable(err) || store.IsPermanent(err) {
		t.Fatalf("WriteBatch before Prepare: %v, want a retryable ErrNotPrepared", err)
	}
	if _, err := st.RuleStats(ctx, "c"); !errors.Is(err, store.ErrNotPrepared) {
		t.Errorf("RuleStats before Prepare: %v, want ErrNotPrepared", err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var tables int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Fatalf("before Prepare the database has %d tables, want none: nothing is done before the migrations", tables)
	}

	if err := st.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := st.WriteBatch(ctx, b)
	if err != nil || res.Events != 1 || res.Versions != 1 {
		t.Fatalf("WriteBatch after Prepare: %+v, %v; want 1 event and 1 version stored", res, err)
	}

	sec, err := store.Connect(store.Options{URL: dsn, Secondary: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sec.Close()
	got, err := sec.Newest(ctx, "c", "", "configmaps", "ns", "obj")
	if err != nil || got == nil {
		t.Fatalf("a Secondary store, never prepared, reads: %v, %v; want the version", got, err)
	}
}

package store_test

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"testing"
	"time"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/pgtest"
)

// TestMaintainKeepsTheRecordWithoutRules: with no rule in force (none yet,
// all deleted or invalid) maintenance deletes nothing; with one, its
// retention applies.
func TestMaintainKeepsTheRecordWithoutRules(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	old := now.AddDate(0, 0, -3)
	k := sha256.Sum256([]byte("old"))
	if _, err := st.WriteBatch(ctx, &model.Batch{Events: []model.Event{{
		Cluster: "default", Key: k[:], StageAt: old, AuditID: "old", Stage: "ResponseComplete", Verb: "delete",
		RequestURI: "/api/v1/namespaces/prod/configmaps/x", Username: "mallory", Resource: "configmaps",
		Namespace: "prod", Name: "x", ResponseCode: 200,
	}}}); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		var n int
		if err := st.Pool().QueryRow(ctx, "SELECT count(*) FROM events").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	log := slog.New(slog.DiscardHandler)

	st.MaintainOnce(ctx, now, 0, log)
	if n := count(); n != 1 {
		t.Fatalf("no rule in force: %d events left, want the 1 recorded", n)
	}
	st.MaintainOnce(ctx, now, 10*24*time.Hour, log)
	if n := count(); n != 1 {
		t.Fatalf("10-day retention: %d events left, want the 3-day-old one", n)
	}
	st.MaintainOnce(ctx, now, 48*time.Hour, log)
	if n := count(); n != 0 {
		t.Fatalf("2-day retention: %d events left, want 0", n)
	}
}

package store

import (
	"context"
	"testing"
	"time"

	"github.com/options-record/options-record/test/backofftest"
)

// TestListenRuleObjectsReconnects: the listening connection is killed
// (pg_terminate_backend); ListenRuleObjects reconnects after its backoff
// and calls fn again, and returns nil once ctx ends.
func TestListenRuleObjectsReconnects(t *testing.T) {
	s := openStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := make(chan struct{}, 16)
	done := make(chan error, 1)
	go func() { done <- s.ListenRuleObjects(ctx, func() { calls <- struct{}{} }) }()
	wait := func(what string) {
		t.Helper()
		select {
		case <-calls:
		case err := <-done:
			t.Fatalf("%s: ListenRuleObjects returned %v", what, err)
		case <-time.After(time.Minute):
			t.Fatalf("%s: fn not called", what)
		}
	}
	wait("listening")
	if _, err := s.pool.raw.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'LISTEN%'`); err != nil {
		t.Fatal(err)
	}
	wait("listening again after the connection was killed")
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ListenRuleObjects after cancel: %v, want nil", err)
	}
}

// TestListenBackoffJitters: the reconnection waits double from 1 s to
// 30 s, each up to half again longer, and two replicas' differ (recorded
// with Step, not waited).
func TestListenBackoffJitters(t *testing.T) {
	bo := listenBackoff
	if bo.Duration != time.Second || bo.Cap != 30*time.Second || bo.Factor != 2 || bo.Jitter != 0.5 {
		t.Errorf("listenBackoff: %+v, want 1 s doubling to 30 s, half of jitter", bo)
	}
	backofftest.Jittered(t, bo, 8)
}

package store

import (
	"context"
	"slices"
	"testing"
	"time"
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
	var seqs [2][]time.Duration
	for i := range seqs {
		bo := listenBackoff
		for j := range 8 {
			d := bo.Step()
			low := min(time.Second<<j, 30*time.Second)
			if d < low || d > low+low/2 {
				t.Errorf("replica %d, wait %d: %s, want within [%s, %s]", i, j+1, d, low, low+low/2)
			}
			seqs[i] = append(seqs[i], d)
		}
	}
	if slices.Equal(seqs[0], seqs[1]) {
		t.Errorf("two replicas reconnect in lockstep: both wait %v", seqs[0])
	}
}

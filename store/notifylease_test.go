package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/options-record/options-record/store/pgtest"
)

// A replica whose lease ran out while it was still sending, and whose
// message another replica has claimed since, records nothing: its late
// outcome (sent, retry, dropped) neither clears the newer claim's lease
// (which would let a third replica send alongside the second) nor
// overrides its outcome; it gets ErrLeaseLost.
func TestStaleNotificationOutcomeChangesNothing(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	storeRouted(t, s, auditEvent("1", "delete", "bob", "configmaps", "prod", "cm", time.Minute, nil))
	if n, err := s.GroupNotifications(ctx, 0); err != nil || n != 1 {
		t.Fatalf("grouping: %d messages, %v; want 1", n, err)
	}
	// expire ends the current lease, as the lease's time passing would.
	expire := func() {
		t.Helper()
		if _, err := s.Pool().Exec(ctx, `UPDATE notification_messages SET lease_until = now() - interval '1 second'`); err != nil {
			t.Fatal(err)
		}
	}
	claim := func() *NotificationMessage {
		t.Helper()
		m, err := s.ClaimNotification(ctx, "chat", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, c := range []struct {
		name  string
		stale func(id string, attempt int) error
	}{
		{"sent", func(id string, a int) error { return s.NotificationSent(ctx, id, a) }},
		{"retry", func(id string, a int) error { return s.NotificationRetry(ctx, id, a, 0, "timeout") }},
		{"dropped", func(id string, a int) error { return s.NotificationDropped(ctx, id, a, "rejected", "400") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := claim()
			if a == nil {
				t.Fatal("no message to claim")
			}
			expire()
			b := claim()
			if b == nil || b.ID != a.ID || b.Attempts != a.Attempts+1 {
				t.Fatalf("second claim after the lease: %+v; want the same message, one attempt more", b)
			}
			if err := c.stale(a.ID, a.Attempts); !errors.Is(err, ErrLeaseLost) {
				t.Errorf("stale outcome: %v; want ErrLeaseLost", err)
			}
			if m := claim(); m != nil {
				t.Fatalf("a third replica claimed %s (attempt %d) while the second still holds it", m.ID, m.Attempts)
			}
			var sent, dropped bool
			if err := s.Pool().QueryRow(ctx, `SELECT sent_at IS NOT NULL, dropped_at IS NOT NULL FROM notification_messages`).Scan(&sent, &dropped); err != nil {
				t.Fatal(err)
			}
			if sent || dropped {
				t.Fatalf("stale outcome recorded: sent %v, dropped %v", sent, dropped)
			}
			// The holder's own outcome is recorded; retry leaves it to be
			// claimed again by the next subtest.
			if err := s.NotificationRetry(ctx, b.ID, b.Attempts, 0, "timeout"); err != nil {
				t.Fatalf("current claim's retry: %v", err)
			}
		})
	}
	m := claim()
	if m == nil {
		t.Fatal("no message to claim after a retry")
	}
	if err := s.NotificationSent(ctx, m.ID, m.Attempts); err != nil {
		t.Fatalf("current claim's sent: %v", err)
	}
	if err := s.NotificationSent(ctx, m.ID, m.Attempts); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("second sent of one claim: %v; want ErrLeaseLost", err)
	}
}

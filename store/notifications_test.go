package store_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/pgtest"
)

// TestNotificationOutboxIngestOnly: the outbox is the ingest role's work
// queue: the reader, which reads the record, and the API's role can
// neither read nor write it.
func TestNotificationOutboxIngestOnly(t *testing.T) {
	ctx := context.Background()
	r := pgtest.NewRoles(t)
	ingest, err := store.Open(ctx, store.Options{URL: r.Ingest})
	if err != nil {
		t.Fatal(err)
	}
	defer ingest.Close()
	for _, sql := range []string{`SELECT count(*) FROM notification_outbox`, `SELECT count(*) FROM notification_messages`} {
		if _, err := ingest.Pool().Exec(ctx, sql); err != nil {
			t.Errorf("ingest: %s: %v", sql, err)
		}
	}
	connect := func(dsn string) *pgx.Conn {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	rc, ac := connect(r.Reader), connect(r.API)
	for _, sql := range []string{
		`SELECT count(*) FROM public.notification_outbox`,
		`SELECT count(*) FROM public.notification_messages`,
		`UPDATE public.notification_messages SET sent_at = now()`,
		`DELETE FROM public.notification_outbox`,
	} {
		wantDenied(t, rc, "reader", sql)
		wantDenied(t, ac, "api", sql)
	}
}

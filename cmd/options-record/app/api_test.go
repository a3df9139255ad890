package app

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/pgtest"
)

// TestAPIPoolIsItsOwnAndBounded: the restore API reads through its own
// small pool, whose sessions have a statement_timeout and an
// idle_in_transaction_session_timeout: with every API connection taken
// the ingest's store still answers, and a long statement is cancelled.
func TestAPIPoolIsItsOwnAndBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	ingest, err := store.Open(ctx, store.Options{URL: dsn, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ingest.Close()
	for _, tt := range []struct {
		name            string
		o               APIOptions
		conns           int32
		timeout, idleTx string
	}{
		{"defaults", APIOptions{}, 4, "30s", "10s"},
		{"flags", APIOptions{MaxConns: 2, StatementTimeout: 250 * time.Millisecond}, 2, "250ms", "10s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api, owner, err := openAPIStores(ctx, &database{URL: dsn, APIURL: dsn}, &tt.o, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			defer api.Close()
			defer owner.Close()
			if api.Pool() == ingest.Pool() || api.Pool().Config().MaxConns != tt.conns {
				t.Fatalf("API pool: shared %v, MaxConns %d, want its own with %d", api.Pool() == ingest.Pool(), api.Pool().Config().MaxConns, tt.conns)
			}
			if owner.Pool().Config().MaxConns != tt.conns {
				t.Errorf("API owner's pool: MaxConns %d, want %d", owner.Pool().Config().MaxConns, tt.conns)
			}
			for name, pool := range map[string]*pgxpool.Pool{"reader": api.Pool(), "owner": owner.Pool()} {
				var timeout, idleTx string
				if err := pool.QueryRow(ctx, "SELECT current_setting('statement_timeout'), current_setting('idle_in_transaction_session_timeout')").Scan(&timeout, &idleTx); err != nil {
					t.Fatal(err)
				}
				if timeout != tt.timeout || idleTx != tt.idleTx {
					t.Errorf("API %s session: statement_timeout %s, idle_in_transaction_session_timeout %s, want %s and %s", name, timeout, idleTx, tt.timeout, tt.idleTx)
				}
			}
			// Every API connection busy: the ingest is not kept waiting.
			var held []*pgxpool.Conn
			for range tt.conns {
				c, err := api.Pool().Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, c)
			}
			// Held until released: a ping that waits for a connection
			// would wait the whole minute, which only ends the test.
			pctx, cancel := context.WithTimeout(ctx, time.Minute)
			if err := ingest.Ping(pctx); err != nil {
				t.Errorf("the ingest's store with every API connection taken: %v", err)
			}
			cancel()
			for _, c := range held {
				c.Release()
			}
		})
	}
	api, owner, err := openAPIStores(ctx, &database{URL: dsn, APIURL: dsn}, &APIOptions{StatementTimeout: 200 * time.Millisecond}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	defer owner.Close()
	var pe *pgconn.PgError
	if _, err := api.Pool().Exec(ctx, "SELECT pg_sleep(5)"); !errors.As(err, &pe) || pe.Code != "57014" {
		t.Errorf("a 5 s statement on the API pool: %v, want query_canceled (57014)", err)
	}
}

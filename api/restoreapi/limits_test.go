package restoreapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/pgtest"
)

// tokenUsers authenticates "Bearer user:<name>" as <name>.
type tokenUsers struct{}

func (tokenUsers) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	name, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer user:")
	if !ok {
		return nil, false, nil
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: name}}, true, nil
}

func getAs(h http.Handler, who, path string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Authorization", "Bearer user:"+who)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// lockRecord holds an ACCESS EXCLUSIVE lock on object_versions, so every
// read of versions waits in PostgreSQL, until the returned function runs.
func lockRecord(t *testing.T, dsn string) func() {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE object_versions IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release := func() { once.Do(func() { _ = tx.Rollback(ctx); _ = conn.Close(ctx) }) }
	t.Cleanup(release)
	return release
}

// waitingReads waits until n queries wait for a lock in the database.
func waitingReads(t *testing.T, dsn string, n int) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(20 * time.Second)
	for {
		var got int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d queries wait for the lock, want %d", got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAPIWorkIsBounded: a read that PostgreSQL cannot answer in time ends
// with 504 (the API pool's statement_timeout, the request's deadline), and
// requests over the caller's or the API's cap are answered 429 with
// Retry-After at once, through the HTTP API on a real database.
func TestAPIWorkIsBounded(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	ctx := context.Background()
	ingest, err := store.Open(ctx, store.Options{URL: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer ingest.Close()
	writeRecord(t, ingest, hiddenRecord()...)
	api := func(o store.Options) *store.Store {
		o.URL, o.Secondary = dsn, true
		st, err := store.Open(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		return st
	}
	server := func(st *store.Store, o Options) http.Handler {
		o.Authenticator = tokenUsers{}
		return newServer(t, recordOptions{Reader: st, Authorizer: denySecrets{}}, o)
	}
	const changes = "/api/v1/clusters/default/changes?namespace=prod"

	for _, tt := range []struct {
		name string
		st   store.Options
		o    Options
	}{
		{"statement timeout", store.Options{StatementTimeout: 300 * time.Millisecond}, Options{RequestTimeout: time.Hour}},
		{"request deadline", store.Options{}, Options{RequestTimeout: 300 * time.Millisecond}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := server(api(tt.st), tt.o)
			release := lockRecord(t, dsn)
			answer := make(chan *httptest.ResponseRecorder, 1)
			go func() { answer <- getAs(h, "reader", changes) }()
			got := false
			select {
			case rec := <-answer:
				got = true
				if rec.Code != http.StatusGatewayTimeout || !strings.Contains(rec.Body.String(), `"reason":"Timeout"`) {
					t.Errorf("GET %s with the record locked = %d %s, want 504 Timeout", changes, rec.Code, rec.Body)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("GET %s with the record locked: no answer in 10s", changes)
			}
			release()
			if !got {
				<-answer
			}
			if rec := getAs(h, "reader", changes); rec.Code != http.StatusOK {
				t.Errorf("GET %s after = %d %s", changes, rec.Code, rec.Body)
			}
		})
	}

	t.Run("in-flight caps", func(t *testing.T) {
		h := server(api(store.Options{}), Options{MaxInFlight: 3, MaxInFlightPerUser: 2})
		release := lockRecord(t, dsn)
		var wg sync.WaitGroup
		codes := make(chan int, 3)
		held := func(who string) {
			wg.Add(1)
			go func() { defer wg.Done(); codes <- getAs(h, who, changes).Code }()
		}
		held("alice")
		held("alice")
		waitingReads(t, dsn, 2)
		refused := func(who, why string) {
			answer := make(chan *httptest.ResponseRecorder, 1)
			wg.Add(1)
			go func() { defer wg.Done(); answer <- getAs(h, who, changes) }()
			var rec *httptest.ResponseRecorder
			select {
			case rec = <-answer:
			case <-time.After(10 * time.Second):
				t.Errorf("%s's request over the cap was not answered at once (held with the others)", who)
				return
			}
			body, _ := io.ReadAll(rec.Body)
			if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" || !strings.Contains(string(body), why) {
				t.Errorf("%s's request = %d %s (Retry-After %q), want 429 with %q", who, rec.Code, body, rec.Header().Get("Retry-After"), why)
			}
		}
		refused("alice", "2 of your requests are being served")
		held("bob")
		waitingReads(t, dsn, 3)
		refused("carol", "the API serves 3 requests at once")
		release()
		wg.Wait()
		close(codes)
		for c := range codes {
			if c != http.StatusOK {
				t.Errorf("a held request ended with %d", c)
			}
		}
		if rec := getAs(h, "carol", changes); rec.Code != http.StatusOK {
			t.Errorf("carol's request once the others ended = %d %s", rec.Code, rec.Body)
		}
	})
}

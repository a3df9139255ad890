package auditsink_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	. "github.com/options-record/options-record/test/gen"
)

// TestStoreFailureIsNotAcknowledged: with no journal, a batch the store
// cannot commit (here PostgreSQL refuses the insert) is answered 503 with
// Retry-After, never 200, and nothing of it is stored; the apiserver's
// retry of the same batch, once the store works, stores it once.
func TestStoreFailureIsNotAcknowledged(t *testing.T) {
	e := newEnv(t)
	srv := e.server(1 << 20)
	ctx := context.Background()
	// The store fails, not only is down: every insert into events raises.
	if _, err := e.pool.Exec(ctx, `
CREATE FUNCTION refuse_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'the disk is full (test)'; END $$;
CREATE TRIGGER refuse_events BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION refuse_events();`); err != nil {
		t.Fatal(err)
	}
	body := EventList(
		Event(Namespace("prod"), Name("f1"), Response(ConfigMap("prod", "f1", "uid-f1", 10, nil))),
		Event(User("mallory"), Verb("delete"), Namespace("prod"), Name("f2"), Code(200), Response(ConfigMap("prod", "f2", "uid-f2", 11, nil))),
	)
	req := func() (int, http.Header) {
		t.Helper()
		r, _ := http.NewRequest(http.MethodPost, srv.URL+"/audit", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer "+token)
		resp, err := srv.Client().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	code, hdr := req()
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
		t.Fatalf("a batch the store refused: %d (Retry-After %q), want 503 with Retry-After", code, hdr.Get("Retry-After"))
	}
	if _, err := e.pool.Exec(ctx, `DROP TRIGGER refuse_events ON events`); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM object_versions`); n != 0 {
		t.Fatalf("%d versions of a refused batch were stored", n)
	}
	for i := range 2 { // the apiserver's retry, then a redelivery
		if code, _ := req(); code != http.StatusOK {
			t.Fatalf("delivery %d: %d", i+1, code)
		}
	}
	if n, v := e.count(`SELECT count(*) FROM events`), e.count(`SELECT count(*) FROM object_versions`); n != 2 || v != 2 {
		t.Errorf("after the retry and a redelivery: %d events, %d versions; want 2 and 2", n, v)
	}
}

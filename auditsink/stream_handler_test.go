package auditsink_test

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/auditsink"
	. "github.com/options-record/options-record/test/gen"
)

// streamingServer is the real handler with small chunks, so that a batch
// of a few megabytes is decoded as a stream and stored chunk by chunk.
func (e *env) streamingServer(chunk, maxEvent int64) *httptest.Server {
	e.t.Helper()
	tf := filepath.Join(e.t.TempDir(), "token")
	if err := os.WriteFile(tf, []byte(token+"\n"), 0o600); err != nil {
		e.t.Fatal(err)
	}
	auth, err := auditsink.NewAuthenticator([]auditsink.ClientConfig{{Cluster: "default", TokenFile: tf}}, "")
	if err != nil {
		e.t.Fatal(err)
	}
	h, err := auditsink.NewHandler(auditsink.HandlerOptions{Pipeline: e.pipe, Authenticator: auth,
		ChunkBytes: chunk, MaxEventBytes: maxEvent})
	if err != nil {
		e.t.Fatal(err)
	}
	srv := httptest.NewTLSServer(h)
	e.t.Cleanup(srv.Close)
	return srv
}

// TestLargeBatchIsStreamedAndStoredWhole: a batch many times larger than
// what the sink holds in memory (large ConfigMaps written beside a
// Deployment's deletion) is stored whole, chunk by chunk; an event larger
// than the largest taken is skipped and counted, not the batch; the batch
// redelivered adds nothing.
func TestLargeBatchIsStreamedAndStoredWhole(t *testing.T) {
	e := newEnv(t)
	srv := e.streamingServer(256<<10, 1<<20)
	value := strings.Repeat("x", 100<<10)
	var evs []*auditv1.Event
	for i := range 40 {
		name := fmt.Sprintf("big-%02d", i)
		cm := ConfigMap("prod", name, "uid-"+name, int64(100+i), map[string]string{"v": value})
		evs = append(evs, Event(Namespace("prod"), Name(name), Request(cm), Response(cm)))
	}
	huge := ConfigMap("prod", "huge", "uid-huge", 200, map[string]string{"v": strings.Repeat("y", 2<<20)})
	evs = append(evs[:20], append([]*auditv1.Event{Event(Namespace("prod"), Name("huge"), Request(huge), Response(huge))}, evs[20:]...)...)
	dep := Deployment("prod", "web", "uid-web", 300, 3)
	evs = append(evs, Event(User("mallory"), Verb("delete"), Resource("apps", "v1", "deployments"), Namespace("prod"), Name("web"), Code(200), Response(dep)))
	body := EventList(evs...)
	if len(body) < 4<<20 {
		t.Fatalf("body is %d bytes; the test needs one many chunks long", len(body))
	}
	code, msg := post(t, srv, token, "application/json", body)
	if code != 200 || !strings.Contains(msg, `"received":42`) || !strings.Contains(msg, `"kept":41`) {
		t.Fatalf("got %d %s; want 200 with 42 received and 41 kept", code, msg)
	}
	if n := e.count(`SELECT count(*) FROM object_versions WHERE namespace = 'prod' AND resource = 'configmaps' AND octet_length(object::text) > 100000`); n != 40 {
		t.Errorf("ConfigMaps stored with their state: %d, want 40", n)
	}
	if n := e.count(`SELECT count(*) FROM deletions WHERE namespace = 'prod' AND name = 'web' AND username = 'mallory' AND prior_object IS NOT NULL`); n != 1 {
		t.Errorf("the Deployment's deletion with its prior state: %d rows, want 1", n)
	}
	if n := e.count(`SELECT count(*) FROM events WHERE name = 'huge'`); n != 0 {
		t.Errorf("the oversized event was stored: %d", n)
	}
	code, msg = post(t, srv, token, "application/json", body)
	if code != 200 {
		t.Fatalf("redelivery: %d %s", code, msg)
	}
	if n := e.count(`SELECT count(*) FROM events`); n != 41 {
		t.Errorf("events after redelivery = %d, want 41", n)
	}
}

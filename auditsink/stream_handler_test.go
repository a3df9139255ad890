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
// than the largest taken is stored without its bodies, marked; the batch
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
	if code != 200 || !strings.Contains(msg, `"received":42`) || !strings.Contains(msg, `"kept":42`) {
		t.Fatalf("got %d %s; want 200 with 42 received and kept", code, msg)
	}
	if n := e.count(`SELECT count(*) FROM object_versions WHERE namespace = 'prod' AND resource = 'configmaps' AND octet_length(object::text) > 100000`); n != 40 {
		t.Errorf("ConfigMaps stored with their state: %d, want 40", n)
	}
	if n := e.count(`SELECT count(*) FROM deletions WHERE namespace = 'prod' AND name = 'web' AND username = 'mallory' AND prior_object IS NOT NULL`); n != 1 {
		t.Errorf("the Deployment's deletion with its prior state: %d rows, want 1", n)
	}
	if n := e.count(`SELECT count(*) FROM events WHERE name = 'huge' AND request_object IS NULL
		AND annotations::jsonb->>'audit.k8s.io/truncated' = 'true'`); n != 1 {
		t.Errorf("the oversized event stored without its bodies, marked: %d, want 1", n)
	}
	code, msg = post(t, srv, token, "application/json", body)
	if code != 200 {
		t.Fatalf("redelivery: %d %s", code, msg)
	}
	if n := e.count(`SELECT count(*) FROM events`); n != 42 {
		t.Errorf("events after redelivery = %d, want 42", n)
	}
}

// TestLongDeleteCollectionKeepsWhoDeletedWhat: the namespace controller's
// deletecollection of large objects answers a List longer than the
// largest event taken. It is stored, not skipped: the event, one deletion
// per object with the state recorded before it, the first items' states
// whole and the others' metadata only. Redelivered, it adds nothing.
func TestLongDeleteCollectionKeepsWhoDeletedWhat(t *testing.T) {
	e := newEnv(t)
	srv := e.streamingServer(256<<10, 1<<20)
	var cms []Obj
	for i := range 4 {
		name := fmt.Sprintf("big-%d", i)
		cm := ConfigMap("prod", name, "uid-"+name, int64(100+i), map[string]string{"v": strings.Repeat(string(rune('a'+i)), 400<<10)})
		cms = append(cms, cm)
		if code, msg := post(t, srv, token, "application/json", EventList(Event(Namespace("prod"), Name(name), Request(cm), Response(cm)))); code != 200 {
			t.Fatalf("create %s: %d %s", name, code, msg)
		}
	}
	del := EventList(Event(Verb("deletecollection"), User("system:kube-controller-manager"), Namespace("prod"), Name(""),
		Response(List("v1", "ConfigMapList", 200, cms...))))
	if len(del) < 1<<20 {
		t.Fatalf("the deletecollection is %d bytes; the test needs one longer than the largest event taken", len(del))
	}
	for range 2 { // and its redelivery
		if code, msg := post(t, srv, token, "application/json", del); code != 200 || !strings.Contains(msg, `"kept":1`) {
			t.Fatalf("deletecollection: %d %s; want 200 with the event kept", code, msg)
		}
	}
	if n := e.count(`SELECT count(*) FROM events WHERE verb = 'deletecollection' AND username = 'system:kube-controller-manager'`); n != 1 {
		t.Errorf("deletecollection events: %d, want 1", n)
	}
	if n := e.count(`SELECT count(*) FROM deletions WHERE namespace = 'prod' AND username = 'system:kube-controller-manager'
		AND octet_length(prior_object->'data'->>'v') = 409600`); n != 4 {
		t.Errorf("deletions with their prior state: %d, want 4", n)
	}
	whole := e.count(`SELECT count(*) FROM object_versions WHERE verb = 'deletecollection' AND complete AND object IS NOT NULL`)
	cut := e.count(`SELECT count(*) FROM object_versions WHERE verb = 'deletecollection' AND NOT complete AND object IS NULL AND deleted`)
	if whole < 1 || whole+cut != 4 {
		t.Errorf("deletecollection versions: %d whole and %d metadata only, want at least one whole and 4 in all", whole, cut)
	}
}

// TestPaddedEnvelopeDoesNotHideAMutation: a client chooses its Audit-ID
// and query string, which the apiserver writes before the verb. Padded to
// megabytes, they make an event longer than the largest taken; it is kept
// all the same, its bodies dropped and its long values shortened, marked
// audit.k8s.io/truncated: who did what, and when, is recorded, for a
// deletecollection as for any mutation.
func TestPaddedEnvelopeDoesNotHideAMutation(t *testing.T) {
	e := newEnv(t)
	srv := e.streamingServer(256<<10, 1<<20)
	pad := strings.Repeat("p", 8<<20)
	cm := ConfigMap("prod", "x", "uid-x", 10, map[string]string{"k": "v"})
	tests := []struct {
		name string
		mod  EventMod
		verb string
		body []EventMod
	}{
		{"auditID on a deletecollection", AuditID("id-" + pad), "deletecollection", []EventMod{Name(""), Response(List("v1", "ConfigMapList", 20, cm))}},
		{"requestURI on a deletecollection", URI("/api/v1/namespaces/prod/configmaps?labelSelector=" + pad), "deletecollection", []EventMod{Name(""), Response(List("v1", "ConfigMapList", 20, cm))}},
		{"auditID on a delete", AuditID("id-" + pad), "delete", []EventMod{Response(cm)}},
		{"requestURI on a patch", URI("/api/v1/namespaces/prod/configmaps/x?fieldManager=" + pad), "patch", []EventMod{Request(Obj{"data": Obj{"k": "v"}}), Response(cm)}},
		{"userAgent on a create", UserAgent(pad), "create", []EventMod{Request(cm), Response(cm)}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			user := fmt.Sprintf("mallory-%d", i)
			ns := fmt.Sprintf("team-%d", i)
			mods := append([]EventMod{Verb(tt.verb), User(user), Namespace(ns), Name("x"), tt.mod}, tt.body...)
			body := EventList(Event(mods...))
			code, msg := post(t, srv, token, "application/json", body)
			if code != 200 || !strings.Contains(msg, `"kept":1`) {
				t.Fatalf("got %d %s; want 200 with the event kept", code, msg)
			}
			if n := e.count(`SELECT count(*) FROM events WHERE username = $1 AND verb = $2 AND namespace = $3 AND resource = 'configmaps'
				AND octet_length(audit_id) + octet_length(request_uri) + octet_length(coalesce(user_agent, '')) < 200000
				AND annotations::jsonb->>'audit.k8s.io/truncated' = 'true'`, user, tt.verb, ns); n != 1 {
				t.Errorf("events naming %s, %s and the ConfigMaps of %s, shortened and marked: %d, want 1", user, tt.verb, ns, n)
			}
		})
	}
}

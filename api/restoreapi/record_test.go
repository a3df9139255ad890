package restoreapi

// Fixtures of the tests that serve the API from a real PostgreSQL record
// (pgtest): recorded changes written through the store's write path.

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/pgtest"
)

// rec is one recorded change as a test writes it.
type rec struct {
	verb, user, resource, ns, name string
	at                             time.Duration // after rt0
	code                           int32         // 0: 200
}

var rt0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func sum(parts ...string) []byte {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum(nil)
}

// openRecord opens a store on a fresh database and writes the changes.
func openRecord(t *testing.T, o store.Options, changes ...rec) *store.Store {
	t.Helper()
	ctx := context.Background()
	o.URL = pgtest.NewDatabase(t)
	st, err := store.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	writeRecord(t, st, changes...)
	return st
}

func writeRecord(t *testing.T, st *store.Store, changes ...rec) {
	t.Helper()
	var b model.Batch
	for i, c := range changes {
		at := rt0.Add(c.at)
		uid := "uid-" + c.ns + "-" + c.resource + "-" + c.name
		ek := sum("event", strconv.Itoa(i), c.verb, c.user, uid, at.String())
		code := c.code
		if code == 0 {
			code = 200
		}
		kind := map[string]string{"secrets": "Secret", "configmaps": "ConfigMap"}[c.resource]
		b.Events = append(b.Events, model.Event{Cluster: "default", Key: ek, StageAt: at, AuditID: fmt.Sprintf("audit-%d", i),
			Stage: "ResponseComplete", Verb: c.verb, RequestURI: "/api/v1/namespaces/" + c.ns + "/" + c.resource + "/" + c.name,
			Username: c.user, UserGroups: []string{"system:authenticated"}, APIVersion: "v1", Resource: c.resource,
			Namespace: c.ns, Name: c.name, ObjectUID: uid, ResponseCode: code})
		if code >= 300 {
			continue
		}
		rv := int64(100 + i)
		obj, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": kind,
			"metadata": map[string]any{"name": c.name, "namespace": c.ns, "uid": uid, "resourceVersion": strconv.FormatInt(rv, 10)}})
		b.Versions = append(b.Versions, model.Version{Cluster: "default", UID: uid, Key: sum(string(ek), uid), ResourceVersion: &rv,
			Origin: model.OriginChange, Verb: c.verb, ChangedAt: at, EventKey: ek, APIVersion: "v1", Kind: kind,
			Resource: c.resource, Namespace: c.ns, Name: c.name, Created: c.verb == "create", Deleted: c.verb == "delete",
			Complete: true, Object: obj})
	}
	ctx := context.Background()
	if err := st.EnsurePartitionsAround(ctx, rt0); err != nil {
		t.Fatal(err)
	}
	if _, err := st.WriteBatch(ctx, &b); err != nil {
		t.Fatal(err)
	}
}

// recordServer serves the API from st to the user "reader", authorized by authz.
func recordServer(t *testing.T, st *store.Store, authz authorizer.Authorizer, o Options) http.Handler {
	t.Helper()
	o.Authenticator = oneUser{}
	return newServer(t, recordOptions{Reader: st, Authorizer: authz}, o)
}

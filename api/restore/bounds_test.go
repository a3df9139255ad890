package restore

// Bounds of plans and the deadline of their execution, on a real PostgreSQL
// record (pgtest); the cluster is an httptest server speaking the few
// kube-apiserver requests each test needs.

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/rest"

	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore/planner"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/pgtest"
)

var bt0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func bsum(parts ...string) []byte {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum(nil)
}

// change is one recorded change of a ConfigMap.
type change struct{ user, ns, name string }

// recordOf opens a store on a fresh database and writes the changes (one
// second apart, through the store's write path).
func recordOf(t *testing.T, changes ...change) *testRecord {
	t.Helper()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	st, err := store.Open(ctx, store.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	api, err := store.OpenAPI(ctx, store.Options{URL: url}, st) // the restores table
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Close)
	writeChanges(t, st, 0, changes...)
	return &testRecord{Store: st, api: api}
}

// testRecord is the record (read as the API's reader) and the API's own
// restores and plans, on one database.
type testRecord struct {
	*store.Store
	api *store.APIStore
}

func writeChanges(t *testing.T, st *store.Store, offset int, changes ...change) {
	t.Helper()
	var b model.Batch
	for j, c := range changes {
		i := offset + j
		at := bt0.Add(time.Duration(i) * time.Second)
		uid := "uid-" + c.ns + "-" + c.name
		ek := bsum("event", strconv.Itoa(i), c.user, uid)
		b.Events = append(b.Events, model.Event{Cluster: "default", Key: ek, StageAt: at, AuditID: fmt.Sprintf("audit-%d", i),
			Stage: "ResponseComplete", Verb: "update", RequestURI: "/api/v1/namespaces/" + c.ns + "/configmaps/" + c.name,
			Username: c.user, UserGroups: []string{"system:authenticated"}, APIVersion: "v1", Resource: "configmaps",
			Namespace: c.ns, Name: c.name, ObjectUID: uid, ResponseCode: 200})
		rv := int64(100 + i)
		obj, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": c.name, "namespace": c.ns, "uid": uid, "resourceVersion": strconv.FormatInt(rv, 10)}})
		b.Versions = append(b.Versions, model.Version{Cluster: "default", UID: uid, Key: bsum(string(ek), uid), ResourceVersion: &rv,
			Origin: model.OriginChange, Verb: "update", ChangedAt: at, EventKey: ek, APIVersion: "v1", Kind: "ConfigMap",
			Resource: "configmaps", Namespace: c.ns, Name: c.name, Complete: true, Object: obj})
	}
	ctx := context.Background()
	if err := st.EnsurePartitionsAround(ctx, bt0); err != nil {
		t.Fatal(err)
	}
	if _, err := st.WriteBatch(ctx, &b); err != nil {
		t.Fatal(err)
	}
}

// countingAuthz allows every namespace but "hidden", and counts the
// questions asked.
type countingAuthz struct{ asked atomic.Int64 }

func (a *countingAuthz) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	a.asked.Add(1)
	if attrs.GetNamespace() == "hidden" {
		return authorizer.DecisionDeny, "", nil
	}
	return authorizer.DecisionAllow, "", nil
}

// newService is the restore service over st for the cluster "default",
// whose apiserver is api.
func newService(t *testing.T, st *testRecord, authz authorizer.Authorizer, api http.Handler, maxUndo int) *Service {
	t.Helper()
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	h, err := history.New(history.Options{Reader: st.Store, Authorizer: authz, Cluster: "default"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{History: h, Reader: st.Store, Log: st.api, Kube: &rest.Config{Host: srv.URL}, Cluster: "default", MaxUndoRows: maxUndo})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// noCluster answers every request 404: the tests' plans look nothing up.
var noCluster = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })

func asCaller(name string) context.Context {
	return history.WithCaller(context.Background(), &user.DefaultInfo{Name: name, UID: "uid-" + name, Groups: []string{"system:authenticated"}})
}

func undoBob() PlanRequest {
	since, until := bt0.Add(-time.Hour), bt0.Add(24*time.Hour)
	return PlanRequest{Kind: KindUndo, User: "bob", Since: &since, Until: &until, Preview: true}
}

// TestUndoScanIsBounded: an undo plan scans at most planner.UndoScanFactor times
// its cap of changes, hidden ones included: bob's changes the caller may
// not read neither refuse the plan nor let it through below the bound, and
// past it the plan is refused, saying what to narrow.
func TestUndoScanIsBounded(t *testing.T) {
	const maxUndo = 3 // scans at most 30 rows
	var hidden []change
	for i := range planner.UndoScanFactor * maxUndo {
		hidden = append(hidden, change{"bob", "hidden", fmt.Sprintf("cm-%d", i)})
	}
	st := recordOf(t, hidden...)
	s := newService(t, st, &countingAuthz{}, noCluster, maxUndo)
	p, err := s.CreatePlan(asCaller("alice"), "default", undoBob())
	if err != nil || len(p.Steps) != 0 {
		t.Fatalf("an undo over %d hidden changes (the bound): %v %+v, want an empty plan", len(hidden), err, p)
	}
	writeChanges(t, st.Store, len(hidden), change{"bob", "hidden", "one-more"})
	_, err = s.CreatePlan(asCaller("alice"), "default", undoBob())
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d changes to scan", planner.UndoScanFactor*maxUndo)) {
		t.Fatalf("an undo over %d hidden changes: %v, want refused past the scan bound", len(hidden)+1, err)
	}
}

// TestPlanAuthorizationChecksAreBounded: one plan asks at most
// history.MaxChecks distinct authorization questions (each a
// SubjectAccessReview); bob's changes in more namespaces than that refuse
// the plan, with what to narrow, after exactly that many questions.
func TestPlanAuthorizationChecksAreBounded(t *testing.T) {
	var changes []change
	for i := range history.MaxChecks + 1 {
		changes = append(changes, change{"bob", fmt.Sprintf("ns-%03d", i), "cm"})
	}
	st := recordOf(t, changes...)
	authz := &countingAuthz{}
	s := newService(t, st, authz, noCluster, 0)
	_, err := s.CreatePlan(asCaller("alice"), "default", undoBob())
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d (resource, namespace) pairs", history.MaxChecks)) {
		t.Fatalf("an undo over %d namespaces: %v, want refused past %d checks", len(changes), err, history.MaxChecks)
	}
	if n := authz.asked.Load(); n != history.MaxChecks {
		t.Errorf("%d authorization questions asked, want %d", n, history.MaxChecks)
	}
}

// TestExecutionOutlivesTheRequest: a plan's execution goes on to its end
// when the request that started it ends (its deadline, the caller gone), so
// its outcome is recorded: the caller (answered 504 by the API) reads it
// afterwards. The cluster's answer to the step's write comes only after the
// request's context is cancelled.
func TestExecutionOutlivesTheRequest(t *testing.T) {
	st := recordOf(t)
	reqCtx, cancel := context.WithCancel(asCaller("alice"))
	defer cancel()
	const live = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"doomed","namespace":"shop","uid":"uid-doomed","resourceVersion":"7"}}`
	var deleted atomic.Bool
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/namespaces/shop/configmaps/doomed" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.Method {
		case http.MethodGet:
			_, _ = w.Write([]byte(live))
		case http.MethodDelete:
			// The request's deadline passes while the cluster works.
			cancel()
			deleted.Store(true)
			_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"Status","status":"Success"}`))
		default:
			http.Error(w, "unexpected", http.StatusMethodNotAllowed)
		}
	})
	s := newService(t, st, &countingAuthz{}, api, 0)
	steps := []Step{{Index: 0, Action: ActionDelete, Object: ObjectRef{APIVersion: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespace: "shop", Name: "doomed"},
		Live: &LiveRef{UID: "uid-doomed", ResourceVersion: "7"}, Reason: "bob created it"}}
	planJSON, _ := json.Marshal(steps)
	rec, err := st.api.InsertRestore(context.Background(), &store.RestoreRecord{Cluster: "default", Kind: KindUndo, Username: "alice", UserUID: "uid-alice",
		UserGroups: []string{"system:authenticated"}, Request: []byte(`{"kind":"undo"}`), Plan: planJSON, State: store.RestorePlanned})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.ExecutePlan(reqCtx, "default", rec.ID, ExecuteRequest{Digest: PlanDigest(steps)})
	if err != nil {
		t.Fatalf("the execution ended with its request: %v", err)
	}
	if !deleted.Load() || reqCtx.Err() == nil {
		t.Fatal("the step's write did not outlast the request: nothing is tested")
	}
	if p.State != store.RestoreSucceeded || len(p.Outcome) != 1 || p.Outcome[0].Result != ResultDone {
		t.Errorf("the execution: %s %+v, want succeeded, the delete done", p.State, p.Outcome)
	}
	// What the caller reads afterwards.
	after, err := s.Plan(asCaller("alice"), "default", rec.ID)
	if err != nil || after.State != store.RestoreSucceeded {
		t.Errorf("the plan read afterwards: %v %+v", err, after)
	}
}

package record

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/options-record/options-record/api/history"
	recordv1alpha1 "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/store"
)

// TestAttemptNames: a name is <unix microseconds>.<event key>, one time
// per attempt (its key's hex in either case, lower-case the canonical);
// anything else is not the name of an attempt.
func TestAttemptNames(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 23, 10, 0, 0, 123456000, time.UTC)
	key := []byte(strings.Repeat("\xab", 32))
	name := attemptName(at, key)
	if want := "1795428000123456." + strings.Repeat("ab", 32); name != want {
		t.Fatalf("name %q, want %q", name, want)
	}
	id, err := parseAttemptName("e2e", name)
	if err != nil || id.Cluster != "e2e" || !id.At.Equal(at) || string(id.Key) != string(key) {
		t.Fatalf("parse: %+v %v", id, err)
	}
	hexKey := strings.Repeat("ab", 32)
	// The one rule of long names (shortname.ParseLong): upper-case hex
	// digits name the same attempt, whose name is lower-case.
	if up, err := parseAttemptName("e2e", "1795428000123456."+strings.ToUpper(hexKey)); err != nil || up.At != id.At || string(up.Key) != string(key) {
		t.Errorf("upper-case digits: %+v %v, want %+v", up, err, id)
	}
	for _, bad := range []string{
		"", ".", "1795428000123456", "1795428000123456.", "." + hexKey,
		"-1." + hexKey, "+1." + hexKey, "01." + hexKey, "1e6." + hexKey, "99999999999999999999." + hexKey,
		"1." + strings.Repeat("ab", 31), "1." + strings.Repeat("ab", 33), "1." + hexKey + ".x",
		"u-1." + hexKey, // a deletion's or a change's name
	} {
		if id, err := parseAttemptName("e2e", bad); err == nil {
			t.Errorf("%q parsed: %+v", bad, id)
		}
	}
}

// TestAttemptFieldSelectors: each selectable field narrows the history
// query, as for deletions; metadata.name narrows to its microsecond and
// key; what kubectl cannot mean is refused with the supported list.
func TestAttemptFieldSelectors(t *testing.T) {
	t.Parallel()
	s := newAttemptStorage(nil, nil, "e2e", true)
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	at := now.Add(-time.Hour)
	name := attemptName(at, []byte(strings.Repeat("\x01", 32)))
	tests := []struct {
		sel     string
		check   func(attemptSelection) bool
		wantErr string
	}{
		{sel: "", check: func(x attemptSelection) bool {
			return x.filter.Group == nil && x.filter.Resource == "" && x.since.IsZero() && x.event == nil
		}},
		{sel: "object.resource=configmaps,object.name=app", check: func(x attemptSelection) bool {
			return x.filter.Resource == "configmaps" && x.filter.Name == "app"
		}},
		{sel: "object.apiGroup=", check: func(x attemptSelection) bool { return x.filter.Group != nil && *x.filter.Group == "" }},
		{sel: "actor.username==eve", check: func(x attemptSelection) bool { return x.filter.User == "eve" }},
		{sel: "metadata.name=" + name, check: func(x attemptSelection) bool {
			return x.event != nil && x.event.At.Equal(at) && x.event.Key[0] == 1
		}},
		{sel: "metadata.namespace=prod", check: func(x attemptSelection) bool { return x.filter.Resource == "" && x.event == nil }},
		{sel: "since=-24h,until=2026-11-23T09:00:00Z", check: func(x attemptSelection) bool {
			return x.since.Equal(now.Add(-24*time.Hour)) && x.until.Equal(time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
		}},
		{sel: "actor.username!=eve", wantErr: "only = is supported"},
		{sel: "object.name=a,object.name=deployer", wantErr: "object.name is given more than once"},
		{sel: "result.code=403", wantErr: "not supported for attempts (supported: metadata.name, metadata.namespace, object.apiGroup, object.resource, object.name, actor.username, since, until)"},
		{sel: "until=tomorrow", wantErr: "RFC 3339"},
		{sel: "metadata.name=u-1." + strings.Repeat("ab", 32), wantErr: "not the name of an attempt"},
	}
	for _, tt := range tests {
		t.Run(tt.sel, func(t *testing.T) {
			sel, err := fields.ParseSelector(tt.sel)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.fieldSelector(context.Background(), sel, now)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !apierrors.IsBadRequest(err) {
					t.Fatalf("err = %v, want a bad request with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !tt.check(got) {
				t.Errorf("%q: %+v, %v", tt.sel, got, err)
			}
		})
	}
	// The field labels the scheme accepts are the ones the storage reads.
	scheme := runtime.NewScheme()
	if err := recordv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, f := range append([]string{"metadata.name", "metadata.namespace"}, recordv1alpha1.AttemptSelectableFields...) {
		if _, _, err := scheme.ConvertFieldLabel(recordv1alpha1.SchemeGroupVersion.WithKind("Attempt"), f, "x"); err != nil {
			t.Errorf("the scheme refuses %s: %v", f, err)
		}
	}
	if _, _, err := scheme.ConvertFieldLabel(recordv1alpha1.SchemeGroupVersion.WithKind("ClusterAttempt"), "result.code", "403"); err == nil {
		t.Error("the scheme accepts result.code")
	}
}

// TestAttemptWindow: metadata.name narrows the time window to its
// microsecond, within since and until; outside them nothing can match.
func TestAttemptWindow(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 23, 10, 0, 0, 5000, time.UTC)
	ev := &history.EventID{At: at}
	for _, tt := range []struct {
		name         string
		x            attemptSelection
		since, until time.Time
		ok           bool
	}{
		{"no name: as given", attemptSelection{since: at, until: at.Add(time.Hour)}, at, at.Add(time.Hour), true},
		{"no name, inverted: the history service refuses it", attemptSelection{since: at.Add(time.Hour), until: at}, at.Add(time.Hour), at, true},
		{"a name alone", attemptSelection{event: ev}, at, at.Add(time.Microsecond), true},
		{"a name within since/until", attemptSelection{event: ev, since: at.Add(-time.Hour), until: at.Add(time.Hour)}, at, at.Add(time.Microsecond), true},
		{"a name before since", attemptSelection{event: ev, since: at.Add(time.Second)}, at.Add(time.Second), at.Add(time.Microsecond), false},
		{"a name at until", attemptSelection{event: ev, until: at}, at, at, false},
	} {
		since, until, ok := tt.x.window()
		if !since.Equal(tt.since) || !until.Equal(tt.until) || ok != tt.ok {
			t.Errorf("%s: %s %s %v", tt.name, since, until, ok)
		}
	}
}

// fakeEvents serves the failed mutations of a test, newest first, filtered
// as the store filters them (namespace, time window, cursor, limit).
type fakeEvents struct {
	history.Reader
	events []store.EventRecord
}

func (f *fakeEvents) FailedMutations(_ context.Context, q store.EventQuery) ([]store.EventRecord, error) {
	var out []store.EventRecord
	for _, e := range f.events {
		switch {
		case q.Namespace != nil && e.Namespace != *q.Namespace,
			!q.Since.IsZero() && e.At.Before(q.Since), !q.Until.IsZero() && !e.At.Before(q.Until),
			q.After != nil && !(e.At.Before(q.After.At) || e.At.Equal(q.After.At) && string(e.Key) < string(q.After.Key)):
			continue
		}
		if len(out) < q.Limit {
			out = append(out, e)
		}
	}
	return out, nil
}

func (f *fakeEvents) FailedMutation(_ context.Context, cluster string, at time.Time, key []byte) (*store.EventRecord, error) {
	for i := range f.events {
		if e := &f.events[i]; e.Cluster == cluster && e.At.Equal(at) && string(e.Key) == string(key) {
			return e, nil
		}
	}
	return nil, store.ErrNotFound
}

// getAllButSecrets lets every caller get everything but Secrets.
type getAllButSecrets struct{}

func (getAllButSecrets) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetVerb() == "get" && a.GetResource() != "secrets" {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// TestAttemptStorage: lists and gets through the history service: a list
// leaves out the request bodies, the objects the caller may not get and,
// in every namespace (-A), cluster-scoped objects' attempts; metadata.name
// selects one event even among others of its microsecond; a get is served
// only under the object's scope and namespace, and answers not found for
// what the caller may not read.
func TestAttemptStorage(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	key := func(b byte) []byte { return []byte(strings.Repeat(string(rune(b)), 32)) }
	ev := func(k byte, d time.Duration, resource, ns, name string) store.EventRecord {
		return store.EventRecord{Cluster: "e2e", Key: key(k), At: at.Add(d), Verb: "delete", Username: "eve", APIVersion: "v1",
			Resource: resource, Namespace: ns, Name: name, ResponseCode: 403, ResponseReason: "Forbidden",
			ResponseMessage: "forbidden", RequestObject: []byte(`{"kind":"DeleteOptions","apiVersion":"v1"}`)}
	}
	events := []store.EventRecord{
		ev('d', 3*time.Second, "configmaps", "shop", "d"),
		ev('c', 2*time.Second, "namespaces", "", "shop"),
		ev('e', time.Second, "configmaps", "shop", "e"),
		ev('b', time.Second, "secrets", "shop", "db"),
		ev('a', time.Second, "configmaps", "shop", "a"), // the same microsecond as e's and b's
		ev('9', 0, "configmaps", "other", "x"),
	}
	hist, err := history.New(history.Options{Reader: &fakeEvents{events: events}, Authorizer: getAllButSecrets{}})
	if err != nil {
		t.Fatal(err)
	}
	ns := newAttemptStorage(nil, hist, "e2e", true)
	cl := newAttemptStorage(nil, hist, "e2e", false)
	ctx := func(namespace string) context.Context {
		c := genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "alice"})
		return genericapirequest.WithNamespace(c, namespace)
	}
	names := func(obj any, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		switch l := obj.(type) {
		case *recordv1alpha1.AttemptList:
			for _, a := range l.Items {
				if a.RequestObject != nil {
					t.Errorf("a list carries the request body of %s", a.Name)
				}
				out = append(out, a.Namespace+"/"+a.Object.Name)
			}
		case *recordv1alpha1.ClusterAttemptList:
			for _, a := range l.Items {
				out = append(out, a.Object.Resource+"/"+a.Object.Name)
			}
		}
		return strings.Join(out, " ")
	}
	list := func(s *attemptStorage, namespace, sel string) (any, error) {
		o := &metainternalversion.ListOptions{}
		if sel != "" {
			o.FieldSelector = fields.ParseSelectorOrDie(sel)
		}
		return s.List(ctx(namespace), o)
	}

	if got := names(list(ns, "shop", "")); got != "shop/d shop/e shop/a" {
		t.Errorf("attempts in shop: %s", got)
	}
	if got := names(list(ns, "", "")); got != "shop/d shop/e shop/a other/x" {
		t.Errorf("attempts in every namespace: %s", got)
	}
	if got := names(list(cl, "", "")); got != "namespaces/shop" {
		t.Errorf("cluster attempts: %s", got)
	}
	if got := names(list(ns, "", "metadata.name="+attemptName(at.Add(time.Second), key('a')))); got != "shop/a" {
		t.Errorf("metadata.name of a: %s", got)
	}
	if got := names(list(ns, "", "metadata.name="+attemptName(at.Add(time.Second), key('a'))+",until="+at.Format(time.RFC3339))); got != "" {
		t.Errorf("metadata.name of a, until before it: %s", got)
	}
	if _, err := list(ns, "", "since=2026-11-23T11:00:00Z,until=2026-11-23T10:00:00Z"); !apierrors.IsBadRequest(err) {
		t.Errorf("since after until: %v", err)
	}
	// A name sent unescaped ("a,object.name=e") selects neither a nor e.
	for _, sel := range []string{"object.name=a,object.name=e", "metadata.namespace=shop,metadata.namespace=other"} {
		if got, err := list(ns, "", sel); !apierrors.IsBadRequest(err) {
			t.Errorf("%s: %v %v, want a bad request", sel, got, err)
		}
	}

	get := func(s *attemptStorage, namespace string, k byte, d time.Duration) (*recordv1alpha1.AttemptRecord, error) {
		obj, err := s.Get(ctx(namespace), attemptName(at.Add(d), key(k)), &metav1.GetOptions{})
		switch o := obj.(type) {
		case *recordv1alpha1.Attempt:
			return &o.AttemptRecord, err
		case *recordv1alpha1.ClusterAttempt:
			return &o.AttemptRecord, err
		}
		return nil, err
	}
	a, err := get(ns, "shop", 'a', time.Second)
	if err != nil || a.Object.Name != "a" || a.RequestObject == nil || string(a.RequestObject.Raw) != `{"kind":"DeleteOptions","apiVersion":"v1"}` ||
		a.Result.Code != 403 || a.Result.Reason != "Forbidden" || a.Actor.Username != "eve" || !a.AttemptedAt.Equal(&metav1.MicroTime{Time: at.Add(time.Second)}) {
		t.Errorf("get a: %+v %v", a, err)
	}
	if c, err := get(cl, "", 'c', 2*time.Second); err != nil || c.Object.Resource != "namespaces" {
		t.Errorf("get the Namespace's attempt: %+v %v", c, err)
	}
	for _, tt := range []struct {
		name      string
		s         *attemptStorage
		namespace string
		k         byte
		d         time.Duration
	}{
		{"a Secret's, which the caller may not get", ns, "shop", 'b', time.Second},
		{"in another namespace", ns, "other", 'a', time.Second},
		{"a namespaced object's as a cluster attempt", cl, "", 'a', time.Second},
		{"a cluster-scoped object's in a namespace", ns, "shop", 'c', 2 * time.Second},
		{"at another time", ns, "shop", 'a', 2 * time.Second},
	} {
		if r, err := get(tt.s, tt.namespace, tt.k, tt.d); !apierrors.IsNotFound(err) {
			t.Errorf("%s: %+v %v, want not found", tt.name, r, err)
		}
	}
	if _, err := ns.Get(ctx("shop"), "not-a-name", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("not a name: %v", err)
	}
}

// TestAttemptTable: every recorded string is escaped; the message is
// shortened, the rest of it is in -o yaml.
func TestAttemptTable(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("m", 500)
	a := &recordv1alpha1.Attempt{ObjectMeta: metav1.ObjectMeta{Name: "1.ab"}, AttemptRecord: recordv1alpha1.AttemptRecord{
		Object: recordv1alpha1.ObjectReference{APIGroup: "apps", Resource: "deployments", Name: "web\x1b[2J"}, Subresource: "scale",
		AttemptedAt: metav1.NewMicroTime(time.Now()), Verb: "patch",
		Actor:  recordv1alpha1.Actor{Username: "oidc:\x1b]0;owned\x07mallory", ImpersonatedUser: "x\ny", AuditID: "id\r"},
		Result: recordv1alpha1.AttemptResult{Code: 403, Reason: "Forbidden\n", Message: "no\x1b[31m " + long}}}
	table, err := (&attemptStorage{}).ConvertToTable(context.Background(), &recordv1alpha1.AttemptList{Items: []recordv1alpha1.Attempt{*a}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(table.ColumnDefinitions) != len(table.Rows[0].Cells) {
		t.Fatalf("%d columns, %d cells", len(table.ColumnDefinitions), len(table.Rows[0].Cells))
	}
	for i, c := range table.Rows[0].Cells {
		if s, ok := c.(string); ok && strings.ContainsAny(s, "\x1b\x07\n\r") {
			t.Errorf("column %s: a raw control character reaches the table: %q", table.ColumnDefinitions[i].Name, s)
		}
	}
	cells := map[string]any{}
	for i, c := range table.ColumnDefinitions {
		cells[c.Name] = table.Rows[0].Cells[i]
	}
	if cells["Resource"] != "deployments.apps/scale" || cells["Result"] != `403 "Forbidden\n"` || cells["Verb"] != "patch" {
		t.Errorf("cells: %v", cells)
	}
	if m := cells["Message"].(string); len([]rune(m)) > messageCells+40 || !strings.HasPrefix(m, `"no\x1b[31m mmm`) || !strings.HasSuffix(m, `m…"`) {
		t.Errorf("message cell: %s", m)
	}
	if m := shortMessage("short and plain"); m != "short and plain" {
		t.Errorf("a short message: %q", m)
	}
}

// TestAttemptNamespaceIsOneCell: a refused request names any namespace
// its sender wrote; kubectl get attempts -A prints metadata.namespace as
// is, so one that is not a namespace name is quoted there.
func TestAttemptNamespaceIsOneCell(t *testing.T) {
	t.Parallel()
	s := newAttemptStorage(nil, nil, "e2e", true)
	for ns, want := range map[string]string{
		"prod":                           "prod",
		"x\tfake\tsecrets\u202e\b":       `"x\tfake\tsecrets\u202e\b"`,
		"Not-A-Label but printable text": "Not-A-Label but printable text",
	} {
		e := &history.Event{Namespace: ns, At: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC), Key: make([]byte, 32), Verb: "create"}
		a := s.object(e, false).(*recordv1alpha1.Attempt)
		if a.Namespace != want || a.Object.Namespace != ns {
			t.Errorf("namespace %q: metadata %q, object %q; want metadata %q and the object's as sent", ns, a.Namespace, a.Object.Namespace, want)
		}
	}
}

// parseAttemptName is history.ParseAttemptName with an error.
func parseAttemptName(cluster, name string) (history.EventID, error) {
	id, ok := history.ParseAttemptName(cluster, name)
	if !ok {
		return id, errNotAttemptName
	}
	return id, nil
}

var errNotAttemptName = errors.New("not <unix microseconds>.<event key>")

package model

import (
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// TestANamespaceIsClusterScoped: the apiserver audits a request for a
// Namespace in that namespace itself; the version it records is of a
// cluster-scoped object, whether the answer held the object or not.
func TestANamespaceIsClusterScoped(t *testing.T) {
	at := metav1.NewMicroTime(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	ev := &auditv1.Event{
		AuditID: "a1", Stage: auditv1.StageResponseComplete, Verb: "delete", RequestURI: "/api/v1/namespaces/gone",
		User:           authnv1.UserInfo{Username: "alice"},
		ObjectRef:      &auditv1.ObjectReference{APIVersion: "v1", Resource: "namespaces", Namespace: "gone", Name: "gone", UID: "u1"},
		ResponseStatus: &metav1.Status{Code: 200}, StageTimestamp: at, RequestReceivedTimestamp: at,
	}
	c, err := Convert("c", ev, Selection{Rules: []string{"r"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Versions) != 1 || c.Versions[0].Namespace != "" || c.Versions[0].Name != "gone" || !c.Versions[0].Deleted {
		t.Fatalf("the versions of a Namespace's delete answered without it: %+v", c.Versions)
	}
}

// TestStatesAreStoredWithoutManagedFields: a state the apiserver sent with
// managedFields (an audit policy without omitManagedFields) is stored
// without them, every other byte as sent; so is an update's body.
func TestStatesAreStoredWithoutManagedFields(t *testing.T) {
	at := metav1.NewMicroTime(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	withMF := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"prod","uid":"u1","resourceVersion":"7",` +
		`"managedFields":[{"manager":"kubectl-edit","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:k":{}}}}]},` +
		`"data":{"k":"v \u003c"}}`
	want := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"prod","uid":"u1","resourceVersion":"7"},"data":{"k":"v \u003c"}}`
	ev := &auditv1.Event{
		AuditID: "a1", Stage: auditv1.StageResponseComplete, Verb: "update", RequestURI: "/api/v1/namespaces/prod/configmaps/a",
		User:           authnv1.UserInfo{Username: "alice"},
		ObjectRef:      &auditv1.ObjectReference{APIVersion: "v1", Resource: "configmaps", Namespace: "prod", Name: "a"},
		ResponseStatus: &metav1.Status{Code: 200}, StageTimestamp: at, RequestReceivedTimestamp: at,
		RequestObject:  &runtime.Unknown{Raw: []byte(withMF)},
		ResponseObject: &runtime.Unknown{Raw: []byte(withMF)},
	}
	c, err := Convert("c", ev, Selection{Rules: []string{"r"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Versions) != 1 || string(c.Versions[0].Object) != want {
		t.Fatalf("the stored state:\n%s\nwant\n%s", c.Versions[0].Object, want)
	}
	if rq := string(c.Event.RequestObject); rq != "" && rq != want {
		t.Errorf("the stored request body: %s", rq)
	}
}

// TestADeepPatchIsKept: the apiserver takes patches nested up to 10,000
// levels; a valid one deeper than the fast validator goes (4,096) is kept,
// not dropped as invalid. Invalid JSON is still left out.
func TestADeepPatchIsKept(t *testing.T) {
	at := metav1.NewMicroTime(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	patch := func(body string) *auditv1.Event {
		return &auditv1.Event{
			AuditID: "a1", Stage: auditv1.StageResponseComplete, Verb: "patch", RequestURI: "/api/v1/namespaces/prod/configmaps/a",
			User:           authnv1.UserInfo{Username: "alice"},
			ObjectRef:      &auditv1.ObjectReference{APIVersion: "v1", Resource: "configmaps", Namespace: "prod", Name: "a"},
			ResponseStatus: &metav1.Status{Code: 422}, StageTimestamp: at, RequestReceivedTimestamp: at,
			RequestObject: &runtime.Unknown{Raw: []byte(body)},
		}
	}
	deep := `{"data":` + strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat(`}`, 5000) + `}`
	for _, tt := range []struct {
		body string
		kept bool
	}{{deep, true}, {`{"data":tru}`, false}, {"[{\"op\":\"add\",\"path\":\"/data/k\",\"val\x00\":\"v\"}]", false},
		{"{\"data\":{\"k\":\"tab\there\"}}", false}, {`{"data":{"k":"\"quoted\\\\\" ok"}}`, true},
		// What sonic.Valid takes and PostgreSQL's json refuses (SQLSTATE
		// 22P02), failing the whole batch: malformed escapes.
		{`{"data":{"k":"\x41"}}`, false}, {`{"data":{"k":"\u12"}}`, false}, {`{"data":{"k":"\U0041"}}`, false},
		{`{"data":{"k":"\u00e9\/\b\f\n\r\t\uD83D\uDE00"}}`, true}} {
		c, err := Convert("c", patch(tt.body), Selection{Rules: []string{"r"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if kept := c.Event.RequestObject != nil; kept != tt.kept || c.Sanitized == tt.kept {
			t.Errorf("%.40s…: kept %v (sanitized %v), want kept %v", tt.body, kept, c.Sanitized, tt.kept)
		}
	}
	// A request body is a slice of the webhook's body, and sonic.Valid
	// reads past the end of its slice: a body cut short ("tr" of "true")
	// passed it.
	ev := patch("")
	ev.RequestObject.Raw = []byte(`true`)[:2]
	c, err := Convert("c", ev, Selection{Rules: []string{"r"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Event.RequestObject != nil {
		t.Errorf("%s: kept", c.Event.RequestObject)
	}
}

// TestADeepObjectIsRecorded: an object nested deeper than sonic decodes
// (4,096 levels; the apiserver takes 10,000) still gives its version.
func TestADeepObjectIsRecorded(t *testing.T) {
	at := metav1.NewMicroTime(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	obj := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"prod","uid":"u1","resourceVersion":"7"},` +
		`"data":{"k":` + strings.Repeat(`[`, 5000) + strings.Repeat(`]`, 5000) + `}}`
	ev := &auditv1.Event{
		AuditID: "a1", Stage: auditv1.StageResponseComplete, Verb: "update", RequestURI: "/api/v1/namespaces/prod/configmaps/a",
		User:           authnv1.UserInfo{Username: "alice"},
		ObjectRef:      &auditv1.ObjectReference{APIVersion: "v1", Resource: "configmaps", Namespace: "prod", Name: "a"},
		ResponseStatus: &metav1.Status{Code: 200}, StageTimestamp: at, RequestReceivedTimestamp: at,
		ResponseObject: &runtime.Unknown{Raw: []byte(obj)},
	}
	c, err := Convert("c", ev, Selection{Rules: []string{"r"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Versions) != 1 || c.Versions[0].UID != "u1" || len(c.Skips) > 0 {
		t.Fatalf("versions %d, skips %v", len(c.Versions), c.Skips)
	}
}

// TestANamespaceGoesWithItsFinalize: the namespace controller's last
// step, PUT namespaces/X/finalize emptying spec.finalizers, deletes the
// Namespace; the apiserver answers with the object as sent, phase
// Terminating. Its DELETE, with the kubernetes finalizer left, does not.
func TestANamespaceGoesWithItsFinalize(t *testing.T) {
	at := metav1.NewMicroTime(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	ns := func(finalizers string) string {
		return `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"team-a","uid":"u-ns","resourceVersion":"9",` +
			`"deletionTimestamp":"2026-11-25T09:59:00Z"},"spec":{` + finalizers + `},"status":{"phase":"Terminating"}}`
	}
	for _, tt := range []struct {
		verb, subresource, body string
		gone                    bool
	}{
		{"delete", "", ns(`"finalizers":["kubernetes"]`), false},
		{"update", "finalize", ns(``), true},
	} {
		ev := &auditv1.Event{
			AuditID: "a1", Stage: auditv1.StageResponseComplete, Verb: tt.verb, RequestURI: "/api/v1/namespaces/team-a",
			User:           authnv1.UserInfo{Username: "system:serviceaccount:kube-system:namespace-controller"},
			ObjectRef:      &auditv1.ObjectReference{APIVersion: "v1", Resource: "namespaces", Namespace: "team-a", Name: "team-a", Subresource: tt.subresource},
			ResponseStatus: &metav1.Status{Code: 200}, StageTimestamp: at, RequestReceivedTimestamp: at,
			ResponseObject: &runtime.Unknown{Raw: []byte(tt.body)},
		}
		c, err := Convert("c", ev, Selection{Rules: []string{"r"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Versions) != 1 || c.Versions[0].Deleted != tt.gone {
			t.Errorf("%s %s: versions %+v, want one with deleted=%v", tt.verb, tt.subresource, c.Versions, tt.gone)
		}
	}
}

// TestInvalidUTF8InMapsIsCounted: json.Marshal replaces invalid UTF-8 in
// the annotations and the user's extras without a word; the event is
// still reported sanitized, as is one with it in a text field.
func TestInvalidUTF8InMapsIsCounted(t *testing.T) {
	at := metav1.NewMicroTime(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	for _, mod := range []func(*auditv1.Event){
		func(ev *auditv1.Event) { ev.Annotations = map[string]string{"k": "v\xff"} },
		func(ev *auditv1.Event) { ev.Annotations = map[string]string{"k\xfe": "v"} },
		func(ev *auditv1.Event) { ev.User.Extra = map[string]authnv1.ExtraValue{"scope": {"a\xff"}} },
		func(ev *auditv1.Event) { ev.User.Username = "eve\xff" },
		nil,
	} {
		ev := &auditv1.Event{
			AuditID: "a1", Stage: auditv1.StageResponseComplete, Verb: "delete", RequestURI: "/api/v1/namespaces/x/configmaps/y",
			User:           authnv1.UserInfo{Username: "alice"},
			ObjectRef:      &auditv1.ObjectReference{APIVersion: "v1", Resource: "configmaps", Namespace: "x", Name: "y", UID: "u1"},
			ResponseStatus: &metav1.Status{Code: 200}, StageTimestamp: at, RequestReceivedTimestamp: at,
		}
		if mod != nil {
			mod(ev)
		}
		c, err := Convert("c", ev, Selection{Rules: []string{"r"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.Sanitized != (mod != nil) {
			t.Errorf("annotations %q, extra %q, user %q: sanitized %v", ev.Annotations, ev.User.Extra, ev.User.Username, c.Sanitized)
		}
	}
}

// TestManagedFieldsAreCutBeforeTheStateIsRead: managedFields go before the
// response object is decoded (the decoder then validates half as much of a
// state that carries them), so what they held is never read: a state whose
// managedFields are not JSON (only a forged event has them) is stored
// without them, every byte stored having been validated.
func TestManagedFieldsAreCutBeforeTheStateIsRead(t *testing.T) {
	at := metav1.NewMicroTime(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	obj := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","uid":"u1","resourceVersion":"7",` +
		`"managedFields":[{"manager":tru,"f":"\x"}]},"data":{"k":"v"}}`
	want := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","uid":"u1","resourceVersion":"7"},"data":{"k":"v"}}`
	ev := &auditv1.Event{
		AuditID: "a1", Stage: auditv1.StageResponseComplete, Verb: "update", RequestURI: "/api/v1/namespaces/prod/configmaps/a",
		User:           authnv1.UserInfo{Username: "alice"},
		ObjectRef:      &auditv1.ObjectReference{APIVersion: "v1", Resource: "configmaps", Namespace: "prod", Name: "a"},
		ResponseStatus: &metav1.Status{Code: 200}, StageTimestamp: at, RequestReceivedTimestamp: at,
		ResponseObject: &runtime.Unknown{Raw: []byte(obj)},
	}
	c, err := Convert("c", ev, Selection{Rules: []string{"r"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Versions) != 1 || string(c.Versions[0].Object) != want || len(c.Skips) > 0 {
		t.Fatalf("versions %+v, skipped %v; want one state %s", c.Versions, c.Skips, want)
	}
}

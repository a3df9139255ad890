package pubsub_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/auditsink/pubsub"
)

// gkeView is what the conversion can give back of an apiserver's event
// that went through GKE (doc.go says why each field is or is not exact).
func gkeView(ev auditv1.Event, insertID string) auditv1.Event {
	out := ev
	out.AuditID = types.UID(insertID)
	out.RequestURI, _, _ = strings.Cut(ev.RequestURI, "?")
	out.User = authnv1.UserInfo{Username: ev.User.Username}
	if ev.ImpersonatedUser != nil {
		out.ImpersonatedUser = &authnv1.UserInfo{Username: ev.ImpersonatedUser.Username}
	}
	out.SourceIPs = ev.SourceIPs[:1]
	out.RequestReceivedTimestamp = ev.StageTimestamp
	ref := *ev.ObjectRef
	ref.UID, ref.ResourceVersion = "", ""
	out.ObjectRef = &ref
	out.ResponseStatus = &metav1.Status{Code: ev.ResponseStatus.Code}
	if c := ev.ResponseStatus.Code; c < 200 || c > 299 {
		out.ResponseStatus.Status = metav1.StatusFailure
	}
	return out
}

// jsonEqual compares runtime.Unknown bodies as JSON values.
var jsonEqual = cmp.Transformer("json", func(u *runtime.Unknown) any {
	if u == nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(u.Raw, &v); err != nil {
		return string(u.Raw)
	}
	return v
})

// TestConvertRealAPIServerEvents wraps the events a real kube-apiserver
// wrote (testdata, captured by TestCaptureAPIServerAuditLog) as GKE's
// entries and converts them back.
func TestConvertRealAPIServerEvents(t *testing.T) {
	t.Parallel()
	events := captured(t)
	if len(events) < 9 {
		t.Fatalf("testdata holds %d events; recapture with -update", len(events))
	}
	for _, ev := range events {
		t.Run(ev.Verb+"-"+ev.ObjectRef.Resource+"-"+ev.ObjectRef.Name, func(t *testing.T) {
			entry := toGKE(t, &ev)
			data, err := json.Marshal(entry)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pubsub.Convert(data)
			if err != nil {
				t.Fatalf("convert: %v\n%s", err, data)
			}
			if diff := cmp.Diff(gkeView(ev, entry.InsertID), got, jsonEqual); diff != "" {
				t.Errorf("converted event (-want +got):\n%s", diff)
			}
		})
	}
}

// entry is a GKE LogEntry of the documented shape, for the table.
func entry(method, resource string, modify ...func(m map[string]any)) []byte {
	p := map[string]any{
		"@type": "type.googleapis.com/google.cloud.audit.AuditLog", "serviceName": "k8s.io",
		"methodName": method, "resourceName": resource,
		"authenticationInfo": map[string]any{"principalEmail": "alice@example.com"},
		"requestMetadata":    map[string]any{"callerIp": "203.0.113.7", "callerSuppliedUserAgent": "kubectl/v1.34.0"},
		"status":             map[string]any{},
	}
	e := map[string]any{
		"insertId": "abc123", "timestamp": "2026-11-26T10:00:00.123456Z",
		"logName":   "projects/p/logs/cloudaudit.googleapis.com%2Factivity",
		"resource":  map[string]any{"type": "k8s_cluster", "labels": map[string]any{"cluster_name": "prod", "location": "europe-west1", "project_id": "p"}},
		"operation": map[string]any{"id": "abc123", "producer": "k8s.io", "first": true, "last": true},
		"labels":    map[string]any{"authorization.k8s.io/decision": "allow"}, "protoPayload": p,
	}
	for _, m := range modify {
		m(e)
	}
	out, _ := json.Marshal(e)
	return out
}

func payload(e map[string]any) map[string]any { return e["protoPayload"].(map[string]any) }

func TestConvertTable(t *testing.T) {
	t.Parallel()
	type want struct {
		verb        string
		ref         auditv1.ObjectReference
		uri         string
		user        string
		impersonate string
		code        int32
		level       auditv1.Level
		annotations map[string]string
	}
	base := func(w want) want {
		if w.user == "" {
			w.user = "alice@example.com"
		}
		if w.code == 0 {
			w.code = http.StatusOK
		}
		if w.level == "" {
			w.level = auditv1.LevelMetadata
		}
		if w.annotations == nil {
			w.annotations = map[string]string{"authorization.k8s.io/decision": "allow"}
		}
		return w
	}
	tests := []struct {
		name string
		data []byte
		want want
		err  error
	}{
		{name: "namespaced object",
			data: entry("io.k8s.core.v1.configmaps.delete", "core/v1/namespaces/team/configmaps/settings"),
			want: want{verb: "delete", ref: auditv1.ObjectReference{APIVersion: "v1", Resource: "configmaps", Namespace: "team", Name: "settings"},
				uri: "/api/v1/namespaces/team/configmaps/settings"}},
		{name: "namespaced collection",
			data: entry("io.k8s.core.v1.configmaps.list", "core/v1/namespaces/team/configmaps"),
			want: want{verb: "list", ref: auditv1.ObjectReference{APIVersion: "v1", Resource: "configmaps", Namespace: "team"},
				uri: "/api/v1/namespaces/team/configmaps"}},
		{name: "a namespace's subresource is not a namespaced collection",
			data: entry("io.k8s.core.v1.namespaces.status.update", "core/v1/namespaces/team/status"),
			want: want{verb: "update", ref: auditv1.ObjectReference{APIVersion: "v1", Resource: "namespaces", Name: "team", Subresource: "status"},
				uri: "/api/v1/namespaces/team/status"}},
		{name: "a namespace",
			data: entry("io.k8s.core.v1.namespaces.delete", "core/v1/namespaces/team"),
			want: want{verb: "delete", ref: auditv1.ObjectReference{APIVersion: "v1", Resource: "namespaces", Name: "team"},
				uri: "/api/v1/namespaces/team"}},
		{name: "cluster-scoped object of a dotted group (methodName reverses it)",
			data: entry("io.k8s.authorization.rbac.v1.clusterrolebindings.delete", "rbac.authorization.k8s.io/v1/clusterrolebindings/ops"),
			want: want{verb: "delete", ref: auditv1.ObjectReference{APIGroup: "rbac.authorization.k8s.io", APIVersion: "v1", Resource: "clusterrolebindings", Name: "ops"},
				uri: "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/ops"}},
		{name: "subresource",
			data: entry("io.k8s.apps.v1.deployments.scale.update", "apps/v1/namespaces/team/deployments/web/scale"),
			want: want{verb: "update", ref: auditv1.ObjectReference{APIGroup: "apps", APIVersion: "v1", Resource: "deployments", Namespace: "team", Name: "web", Subresource: "scale"},
				uri: "/apis/apps/v1/namespaces/team/deployments/web/scale"}},
		{name: "refused: google.rpc code 7 is 403",
			data: entry("io.k8s.core.v1.secrets.get", "core/v1/namespaces/team/secrets/db", func(e map[string]any) {
				payload(e)["status"] = map[string]any{"code": 7, "message": "PERMISSION_DENIED"}
				e["labels"] = map[string]any{"authorization.k8s.io/decision": "forbid"}
			}),
			want: want{verb: "get", ref: auditv1.ObjectReference{APIVersion: "v1", Resource: "secrets", Namespace: "team", Name: "db"},
				uri: "/api/v1/namespaces/team/secrets/db", code: http.StatusForbidden, annotations: map[string]string{"authorization.k8s.io/decision": "forbid"}}},
		{name: "a create that succeeded is 201",
			data: entry("io.k8s.core.v1.configmaps.create", "core/v1/namespaces/team/configmaps/settings"),
			want: want{verb: "create", ref: auditv1.ObjectReference{APIVersion: "v1", Resource: "configmaps", Namespace: "team", Name: "settings"},
				uri: "/api/v1/namespaces/team/configmaps", code: http.StatusCreated}},
		{name: "a Status response gives the exact code",
			data: entry("io.k8s.core.v1.configmaps.update", "core/v1/namespaces/team/configmaps/settings", func(e map[string]any) {
				payload(e)["status"] = map[string]any{"code": 3}
				payload(e)["response"] = map[string]any{"@type": "core.k8s.io/v1.Status", "apiVersion": "v1", "kind": "Status", "code": 422, "status": "Failure"}
			}),
			want: want{verb: "update", ref: auditv1.ObjectReference{APIVersion: "v1", Resource: "configmaps", Namespace: "team", Name: "settings"},
				uri: "/api/v1/namespaces/team/configmaps/settings", code: 422, level: auditv1.LevelRequestResponse}},
		{name: "the admission observation's annotation survives, from the labels",
			data: entry("io.k8s.core.v1.secrets.delete", "core/v1/namespaces/team/secrets/db", func(e map[string]any) {
				e["labels"] = map[string]any{"authorization.k8s.io/decision": "allow", "observe.optionsrecord.io/observation": "obs-7f3a"}
			}),
			want: want{verb: "delete", ref: auditv1.ObjectReference{APIVersion: "v1", Resource: "secrets", Namespace: "team", Name: "db"},
				uri:         "/api/v1/namespaces/team/secrets/db",
				annotations: map[string]string{"authorization.k8s.io/decision": "allow", "observe.optionsrecord.io/observation": "obs-7f3a"}}},
		{name: "annotations in protoPayload.metadata, the labels winning",
			data: entry("io.k8s.core.v1.secrets.delete", "core/v1/namespaces/team/secrets/db", func(e map[string]any) {
				payload(e)["metadata"] = map[string]any{"observe.optionsrecord.io/observation": "obs-1", "authorization.k8s.io/decision": "forbid", "plain": "x", "nested/n": map[string]any{}}
			}),
			want: want{verb: "delete", ref: auditv1.ObjectReference{APIVersion: "v1", Resource: "secrets", Namespace: "team", Name: "db"},
				uri:         "/api/v1/namespaces/team/secrets/db",
				annotations: map[string]string{"authorization.k8s.io/decision": "allow", "observe.optionsrecord.io/observation": "obs-1"}}},
		{name: "IAM delegation: the service account is the user, the chain an annotation",
			data: entry("io.k8s.core.v1.configmaps.delete", "core/v1/namespaces/team/configmaps/settings", func(e map[string]any) {
				payload(e)["authenticationInfo"] = map[string]any{"principalEmail": "deployer@p.iam.gserviceaccount.com",
					"serviceAccountDelegationInfo": []any{map[string]any{"firstPartyPrincipal": map[string]any{"principalEmail": "alice@example.com"}}}}
			}),
			want: want{verb: "delete", ref: auditv1.ObjectReference{APIVersion: "v1", Resource: "configmaps", Namespace: "team", Name: "settings"},
				uri: "/api/v1/namespaces/team/configmaps/settings", user: "deployer@p.iam.gserviceaccount.com",
				annotations: map[string]string{"authorization.k8s.io/decision": "allow", pubsub.DelegationAnnotation: "alice@example.com"}}},
		{name: "kubectl --as: authoritySelector is the impersonated user, principalEmail who authenticated",
			data: entry("io.k8s.core.v1.configmaps.delete", "core/v1/namespaces/team/configmaps/settings", func(e map[string]any) {
				payload(e)["authenticationInfo"] = map[string]any{"principalEmail": "alice@example.com", "authoritySelector": "system:serviceaccount:team:deployer"}
			}),
			want: want{verb: "delete", ref: auditv1.ObjectReference{APIVersion: "v1", Resource: "configmaps", Namespace: "team", Name: "settings"},
				uri: "/api/v1/namespaces/team/configmaps/settings", impersonate: "system:serviceaccount:team:deployer"}},
		{name: "kubectl --as with a delegated credential: the selector is the impersonated user",
			data: entry("io.k8s.core.v1.configmaps.delete", "core/v1/namespaces/team/configmaps/settings", func(e map[string]any) {
				payload(e)["authenticationInfo"] = map[string]any{"principalEmail": "deployer@p.iam.gserviceaccount.com", "authoritySelector": "bob",
					"serviceAccountDelegationInfo": []any{map[string]any{"firstPartyPrincipal": map[string]any{"principalEmail": "alice@example.com"}}}}
			}),
			want: want{verb: "delete", ref: auditv1.ObjectReference{APIVersion: "v1", Resource: "configmaps", Namespace: "team", Name: "settings"},
				uri: "/api/v1/namespaces/team/configmaps/settings", user: "deployer@p.iam.gserviceaccount.com", impersonate: "bob",
				annotations: map[string]string{"authorization.k8s.io/decision": "allow", pubsub.DelegationAnnotation: "alice@example.com"}}},
		{name: "not a Kubernetes entry",
			data: entry("google.container.v1.ClusterManager.CreateCluster", "projects/p/locations/l/clusters/c", func(e map[string]any) {
				payload(e)["serviceName"] = "container.googleapis.com"
			}),
			err: pubsub.ErrNotKubernetes},
		{name: "resourceName says nothing", data: entry("io.k8s.core.v1.configmaps.get", "core"), err: pubsub.ErrMalformed},
		{name: "resourceName with an empty segment", data: entry("io.k8s.core.v1.configmaps.get", "core/v1//configmaps"), err: pubsub.ErrMalformed},
		{name: "no insertId", data: entry("io.k8s.core.v1.configmaps.get", "core/v1/namespaces/a/configmaps/b", func(e map[string]any) { delete(e, "insertId") }), err: pubsub.ErrMalformed},
		{name: "not JSON", data: []byte(`{"insertId":`), err: pubsub.ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pubsub.Convert(tc.data)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			w := base(tc.want)
			if got.Verb != w.verb || got.RequestURI != w.uri || got.User.Username != w.user || got.ResponseStatus.Code != w.code || got.Level != w.level {
				t.Errorf("verb %q uri %q user %q code %d level %s; want %q %q %q %d %s",
					got.Verb, got.RequestURI, got.User.Username, got.ResponseStatus.Code, got.Level, w.verb, w.uri, w.user, w.code, w.level)
			}
			if diff := cmp.Diff(&w.ref, got.ObjectRef); diff != "" {
				t.Errorf("objectRef (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(w.annotations, got.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			gotImp := ""
			if got.ImpersonatedUser != nil {
				gotImp = got.ImpersonatedUser.Username
			}
			if gotImp != w.impersonate {
				t.Errorf("impersonated %q, want %q", gotImp, w.impersonate)
			}
			if got.AuditID != "abc123" || got.Stage != auditv1.StageResponseComplete || got.SourceIPs[0] != "203.0.113.7" || got.UserAgent != "kubectl/v1.34.0" {
				t.Errorf("auditID %q stage %s sourceIPs %v userAgent %q", got.AuditID, got.Stage, got.SourceIPs, got.UserAgent)
			}
			if got.RequestObject == nil && got.ResponseObject != nil && strings.Contains(string(got.ResponseObject.Raw), "@type") {
				t.Errorf("GKE's @type member kept: %s", got.ResponseObject.Raw)
			}
		})
	}
}

// TestConvertIAMDelegation: a Google service account's credential used by
// another principal is recorded as GKE's apiserver authenticated it, the
// service account, with or without kubectl --as; the delegation chain,
// originator first, is the event's annotation in both, so both are found
// under the same user.
func TestConvertIAMDelegation(t *testing.T) {
	t.Parallel()
	chain := []any{
		map[string]any{"principalSubject": "principal://iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/gh/subject/repo:o/r",
			"thirdPartyPrincipal": map[string]any{"thirdPartyClaims": map[string]any{"sub": "repo:o/r"}}},
		map[string]any{"firstPartyPrincipal": map[string]any{"principalEmail": "sa1@p.iam.gserviceaccount.com"}},
	}
	const wantChain = "principal://iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/gh/subject/repo:o/r,sa1@p.iam.gserviceaccount.com"
	convert := func(t *testing.T, selector string) auditv1.Event {
		t.Helper()
		ev, err := pubsub.Convert(entry("io.k8s.core.v1.configmaps.delete", "core/v1/namespaces/team/configmaps/settings", func(e map[string]any) {
			a := map[string]any{"principalEmail": "deployer@p.iam.gserviceaccount.com", "serviceAccountDelegationInfo": chain}
			if selector != "" {
				a["authoritySelector"] = selector
			}
			payload(e)["authenticationInfo"] = a
		}))
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	plain, as := convert(t, ""), convert(t, "bob")
	for _, c := range []struct {
		name string
		ev   auditv1.Event
		imp  string
	}{{"plain", plain, ""}, {"--as bob", as, "bob"}} {
		imp := ""
		if c.ev.ImpersonatedUser != nil {
			imp = c.ev.ImpersonatedUser.Username
		}
		if c.ev.User.Username != "deployer@p.iam.gserviceaccount.com" || imp != c.imp {
			t.Errorf("%s: user %q as %q; want %q as %q", c.name, c.ev.User.Username, imp, "deployer@p.iam.gserviceaccount.com", c.imp)
		}
		if got := c.ev.Annotations[pubsub.DelegationAnnotation]; got != wantChain {
			t.Errorf("%s: delegation %q, want %q", c.name, got, wantChain)
		}
	}
}

// TestConvertDelegationHostile: the chain's elements are the principals'
// own strings; each is made printable, without the separator, and
// bounded, the chain too; an annotation of that key in the entry's labels
// (any admission webhook can write one) is not taken for GKE's.
func TestConvertDelegationHostile(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 1000) + "@p.iam.gserviceaccount.com"
	var chain []any
	chain = append(chain,
		map[string]any{"firstPartyPrincipal": map[string]any{"principalEmail": "alice@example.com,root@example.com\n\x1b[31m"}},
		map[string]any{"firstPartyPrincipal": map[string]any{"principalEmail": long}},
		map[string]any{"thirdPartyPrincipal": map[string]any{"thirdPartyClaims": map[string]any{"sub": "x"}}},
		map[string]any{},
	)
	for i := 0; i < 50; i++ {
		chain = append(chain, map[string]any{"firstPartyPrincipal": map[string]any{"principalEmail": fmt.Sprintf("sa%d@p.iam.gserviceaccount.com", i)}})
	}
	ev, err := pubsub.Convert(entry("io.k8s.core.v1.configmaps.delete", "core/v1/namespaces/team/configmaps/settings", func(e map[string]any) {
		payload(e)["authenticationInfo"] = map[string]any{"principalEmail": "deployer@p.iam.gserviceaccount.com", "serviceAccountDelegationInfo": chain}
		e["labels"] = map[string]any{"authorization.k8s.io/decision": "allow", pubsub.DelegationAnnotation: "forged@example.com"}
	}))
	if err != nil {
		t.Fatal(err)
	}
	got := ev.Annotations[pubsub.DelegationAnnotation]
	elems := strings.Split(got, ",")
	if !strings.HasPrefix(got, "alice@example.com") || strings.Contains(got, "forged") || len(elems) < 2 || !strings.HasPrefix(elems[1], "xxxx") {
		t.Errorf("delegation %q: not the chain's first element whole, or forged", got)
	}
	for _, r := range got {
		if !unicode.IsPrint(r) {
			t.Errorf("delegation %q holds %U", got, r)
		}
	}
	if len(got) > 2048 || len(elems) > 9 {
		t.Errorf("delegation of %d bytes, %d elements: not bounded", len(got), len(elems))
	}
	if len(elems) < 5 || elems[2] != "<third-party>" || elems[3] != "<unknown>" || elems[len(elems)-1] != "…" {
		t.Errorf("delegation elements %q: want the third party and unknown named, the cut marked", elems)
	}
	for _, e := range elems {
		if len(e) > 260 {
			t.Errorf("element of %d bytes", len(e))
		}
	}
	// Without a chain, the forged label is dropped too.
	ev, err = pubsub.Convert(entry("io.k8s.core.v1.configmaps.delete", "core/v1/namespaces/team/configmaps/settings", func(e map[string]any) {
		e["labels"] = map[string]any{"authorization.k8s.io/decision": "allow", pubsub.DelegationAnnotation: "forged@example.com"}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := ev.Annotations[pubsub.DelegationAnnotation]; ok {
		t.Errorf("forged delegation kept: %q", v)
	}
}

package model

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// TestSecretDigestsAreTheSameOnEveryPath: a Secret recorded by the webhook
// (an audit event) and by a baseline LIST holds the same keyed, place-bound
// digest of a value, never the value; without a digester neither path
// stores it at all (never an unkeyed digest).
func TestSecretDigestsAreTheSameOnEveryPath(t *testing.T) {
	dg, err := NewSecretDigester([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db","namespace":"prod","uid":"u1","resourceVersion":"7"},"data":{"password":"aHVudGVyMg=="}}`)
	ev := &auditv1.Event{
		Level: auditv1.LevelRequestResponse, AuditID: "a1", Stage: auditv1.StageResponseComplete, Verb: "create",
		User:           authnv1.UserInfo{Username: "alice"},
		ObjectRef:      &auditv1.ObjectReference{Resource: "secrets", Namespace: "prod", Name: "db", APIVersion: "v1"},
		ResponseStatus: &metav1.Status{Code: 201}, ResponseObject: &runtime.Unknown{Raw: secret},
		StageTimestamp: metav1.NewMicroTime(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)),
	}
	password := func(raw []byte) string {
		t.Helper()
		var o struct{ Data map[string]string }
		if err := json.Unmarshal(raw, &o); err != nil {
			t.Fatal(err)
		}
		return o.Data["password"]
	}

	c, err := Convert("prod-eu", ev, Selection{Rules: []string{"r"}}, dg)
	if err != nil || len(c.Versions) != 1 {
		t.Fatalf("webhook path: %v %+v", err, c.Versions)
	}
	b, err := BaselineVersion(BaselineObject{Cluster: "prod-eu", APIVersion: "v1", Resource: "secrets", Raw: secret, Digester: dg, ObservedAt: time.Now()})
	if err != nil {
		t.Fatalf("baseline path: %v", err)
	}
	fromEvent, fromBaseline := password(c.Versions[0].Object), password(b.Object)
	if !strings.HasPrefix(fromEvent, KeyedDigestPrefix) || fromEvent != fromBaseline {
		t.Errorf("the webhook stores %q, the baseline %q: want one keyed digest", fromEvent, fromBaseline)
	}
	if !c.Versions[0].SecretDigested || !b.SecretDigested {
		t.Error("a digested version must say so")
	}

	if _, err := Convert("prod-eu", ev, Selection{Rules: []string{"r"}}, nil); !errors.Is(err, ErrNoDigester) {
		t.Errorf("webhook path without a digester: %v, want ErrNoDigester", err)
	}
	if _, err := BaselineVersion(BaselineObject{Cluster: "prod-eu", APIVersion: "v1", Resource: "secrets", Raw: secret, ObservedAt: time.Now()}); !errors.Is(err, ErrNoDigester) {
		t.Errorf("baseline path without a digester: %v, want ErrNoDigester", err)
	}
	// A rule that records Secret data needs no digester.
	if c, err := Convert("prod-eu", ev, Selection{Rules: []string{"r"}, RecordSecretData: true}, nil); err != nil || password(c.Versions[0].Object) != "aHVudGVyMg==" {
		t.Errorf("recordSecretData: %v", err)
	}
}

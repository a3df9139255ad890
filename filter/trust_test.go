package filter

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/audit/policy"
	authuser "k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"sigs.k8s.io/yaml"

	"github.com/options-record/options-record/api/v1alpha1"
)

// TestCompileOperatorCeilings: tenant rules (outside the trusted
// namespaces) record Secret data only when the operator allows it, and no
// rule keeps the record longer than the operator's ceilings.
func TestCompileOperatorCeilings(t *testing.T) {
	t.Parallel()
	const day = 24 * time.Hour
	tests := []struct {
		name          string
		opts          Options
		obj           v1alpha1.OptionsRecordController
		wantSecret    bool          // Covers("", "secrets", ns).RecordSecretData
		wantRetention time.Duration // the rule's retention after the ceilings
		wantCapped    []string      // each must appear in one of Capped
	}{
		{name: "tenant secret data: digests by default",
			obj:        orc("team-a", "r", recordSecretData()),
			wantSecret: false, wantRetention: v1alpha1.DefaultRetention,
			wantCapped: []string{"spec.recordSecretData is not honoured"}},
		{name: "tenant secret data: honoured when the operator allows it",
			opts:       Options{TenantSecretData: true},
			obj:        orc("team-a", "r", recordSecretData()),
			wantSecret: true, wantRetention: v1alpha1.DefaultRetention},
		{name: "sink namespace secret data: trusted",
			obj:        sinkORC("r", recordSecretData()),
			wantSecret: true, wantRetention: v1alpha1.DefaultRetention},
		{name: "rules file secret data: trusted",
			obj:        orc("", "r", recordSecretData()),
			wantSecret: true, wantRetention: v1alpha1.DefaultRetention},
		{name: "another trusted namespace: trusted",
			opts:       Options{TrustedNamespaces: []string{"platform"}},
			obj:        orc("platform", "r", recordSecretData()),
			wantSecret: true, wantRetention: v1alpha1.DefaultRetention},
		{name: "sink namespace not trusted on this cluster: a tenant",
			opts:       Options{TrustedNamespaces: []string{}},
			obj:        sinkORC("r", recordSecretData(), retention(60*day)),
			wantSecret: false, wantRetention: DefaultTenantMaxRetention,
			wantCapped: []string{"spec.recordSecretData", "spec.retention 1440h0m0s is capped to 720h0m0s"}},
		{name: "sink rule retention: capped to the default ceiling",
			obj:           sinkORC("r", retention(10000*time.Hour)),
			wantRetention: DefaultMaxRetention, wantSecret: false,
			wantCapped: []string{"spec.retention 10000h0m0s is capped to 2160h0m0s"}},
		{name: "sink rule retention: under the ceiling, as written",
			obj:           sinkORC("r", retention(60*day)),
			wantRetention: 60 * day},
		{name: "sink rule retention: the operator's ceiling",
			opts:          Options{MaxRetention: 10 * day},
			obj:           sinkORC("r", retention(60*day)),
			wantRetention: 10 * day, wantCapped: []string{"capped to 240h0m0s"}},
		{name: "sink rule without retention: the default, capped silently",
			opts:          Options{MaxRetention: 10 * day},
			obj:           sinkORC("r"),
			wantRetention: 10 * day},
		{name: "tenant retention: capped lower than sink rules",
			obj:           orc("team-a", "r", retention(60*day)),
			wantRetention: DefaultTenantMaxRetention,
			wantCapped:    []string{"spec.retention 1440h0m0s is capped to 720h0m0s", "outside its trusted namespaces"}},
		{name: "tenant retention: the operator's tenant ceiling",
			opts:          Options{TenantMaxRetention: 60 * day},
			obj:           orc("team-a", "r", retention(60*day)),
			wantRetention: 60 * day},
		{name: "tenant retention: never more than the overall ceiling",
			opts:          Options{MaxRetention: 5 * day, TenantMaxRetention: 60 * day},
			obj:           orc("team-a", "r", retention(60*day)),
			wantRetention: 5 * day, wantCapped: []string{"capped to 120h0m0s"}},
		{name: "tenant retention: shorter is as written",
			obj:           orc("team-a", "r", retention(2*day)),
			wantRetention: 2 * day},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rules, statuses := Compile([]v1alpha1.OptionsRecordController{tt.obj}, tt.opts)
			st := statuses[0]
			if !st.Ready {
				t.Fatalf("not Ready: %s: %s", st.Reason, st.Message)
			}
			d := rules.Covers("", "secrets", st.Namespace)
			if !d.Keep {
				t.Fatalf("the rule does not cover Secrets of its namespace %s", st.Namespace)
			}
			if d.RecordSecretData != tt.wantSecret {
				t.Errorf("RecordSecretData = %t, want %t", d.RecordSecretData, tt.wantSecret)
			}
			if d.Retention != tt.wantRetention || rules.MaxRetention() != tt.wantRetention {
				t.Errorf("retention = %s (MaxRetention %s), want %s", d.Retention, rules.MaxRetention(), tt.wantRetention)
			}
			capped := strings.Join(st.Capped, "\n")
			for _, want := range tt.wantCapped {
				if !strings.Contains(capped, want) {
					t.Errorf("Capped %q does not say %q", st.Capped, want)
				}
			}
			if len(tt.wantCapped) == 0 && len(st.Capped) > 0 {
				t.Errorf("Capped = %q, want nothing", st.Capped)
			}
		})
	}
}

// TestCompileTrustedNamespaces: only objects in a trusted namespace (and
// the operator's objects without one) may select other namespaces; the
// others are tenant rules of their own namespace.
func TestCompileTrustedNamespaces(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		opts       Options
		obj        v1alpha1.OptionsRecordController
		wantReason string
		keeps      map[string]bool // namespace of an event → kept
	}{
		{name: "default: the sink namespace is trusted",
			obj:        sinkORC("r", namespaces("prod")),
			wantReason: v1alpha1.ReasonSynced, keeps: map[string]bool{"prod": true, "dev": false}},
		{name: "default: another namespace is a tenant",
			obj:        orc("team-a", "r"),
			wantReason: v1alpha1.ReasonSynced, keeps: map[string]bool{"team-a": true, "prod": false}},
		{name: "default: a tenant selecting namespaces is out of scope",
			obj:        orc("team-a", "r", namespaces("prod")),
			wantReason: v1alpha1.ReasonNamespaceOutOfScope, keeps: map[string]bool{"prod": false, "team-a": false}},
		{name: "listed namespaces are trusted",
			opts:       Options{TrustedNamespaces: []string{"options-record", "platform"}},
			obj:        orc("platform", "r", namespaces("prod")),
			wantReason: v1alpha1.ReasonSynced, keeps: map[string]bool{"prod": true, "platform": false}},
		{name: "a list without the sink namespace does not trust it",
			opts:       Options{TrustedNamespaces: []string{"platform"}},
			obj:        sinkORC("r", namespaces("prod")),
			wantReason: v1alpha1.ReasonNamespaceOutOfScope, keeps: map[string]bool{"prod": false}},
		{name: "no trusted namespace: an empty spec records its own namespace only",
			opts:       Options{TrustedNamespaces: []string{}},
			obj:        sinkORC("r"),
			wantReason: v1alpha1.ReasonSynced, keeps: map[string]bool{"options-record": true, "prod": false}},
		{name: "no trusted namespace: the rules file is still trusted",
			opts:       Options{TrustedNamespaces: []string{}},
			obj:        orc("", "r", namespaces("prod")),
			wantReason: v1alpha1.ReasonSynced, keeps: map[string]bool{"prod": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rules, statuses := Compile([]v1alpha1.OptionsRecordController{tt.obj}, tt.opts)
			if st := statuses[0]; st.Reason != tt.wantReason {
				t.Errorf("Reason = %s (%s), want %s", st.Reason, st.Message, tt.wantReason)
			}
			for namespace, want := range tt.keeps {
				if got := rules.Match(event(ns(namespace))).Keep; got != want {
					t.Errorf("event in %s: Keep = %t, want %t", namespace, got, want)
				}
			}
			// The audit policy scopes the rule the same way.
			p := AuditPolicy([]v1alpha1.OptionsRecordController{tt.obj}, tt.opts)
			for namespace, want := range tt.keeps {
				if got := policyLevel(t, p, namespace) == audit.LevelRequestResponse; got != want {
					t.Errorf("policy for a ConfigMap in %s: RequestResponse = %t, want %t", namespace, got, want)
				}
			}
		})
	}
}

// policyLevel is the level the apiserver audits an update of a ConfigMap
// in ns at under p.
func policyLevel(t *testing.T, p *auditv1.Policy, ns string) audit.Level {
	t.Helper()
	data, err := yaml.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	internal, err := policy.LoadPolicyFromBytes(data)
	if err != nil {
		t.Fatalf("the apiserver would not load the policy: %v", err)
	}
	return policy.NewPolicyRuleEvaluator(internal).EvaluatePolicyRule(authorizer.AttributesRecord{
		User: &authuser.DefaultInfo{Name: "alice"}, Verb: "update", Namespace: ns, APIVersion: "v1",
		Resource: "configmaps", Name: "n", ResourceRequest: true,
	}).Level
}

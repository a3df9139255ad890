package rulesync

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/options-record/options-record/api/v1alpha1"
	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/store"
)

// TestDesiredStatusCapped: a rule the operator's ceilings narrowed says so
// in a Capped condition, which goes when the rule no longer is.
func TestDesiredStatusCapped(t *testing.T) {
	capped := filter.RuleStatus{Generation: 2, Ready: true, Reason: v1alpha1.ReasonSynced, Message: "ok",
		Capped: []string{"spec.retention 1440h0m0s is capped to 720h0m0s", "spec.recordSecretData is not honoured"}}
	st := desiredStatus(v1alpha1.OptionsRecordControllerStatus{}, capped, store.RuleStat{})
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionCapped)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonOperatorCeiling ||
		c.Message != capped.Capped[0]+"; "+capped.Capped[1] || c.ObservedGeneration != 2 {
		t.Fatalf("Capped condition = %+v", c)
	}
	asWritten := capped
	asWritten.Capped = nil
	next := desiredStatus(st, asWritten, store.RuleStat{})
	if meta.FindStatusCondition(next.Conditions, v1alpha1.ConditionCapped) != nil {
		t.Error("Capped condition kept for a rule applied as written")
	}
	if fingerprint(st) == fingerprint(next) {
		t.Error("the status fingerprint ignores the Capped condition: the change would never be written")
	}
}

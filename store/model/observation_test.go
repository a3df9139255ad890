package model

import (
	"slices"
	"testing"
)

// Claims takes only the observing webhook's annotations whose value is an
// id: annotations are hostile strings.
func TestClaims(t *testing.T) {
	id := "0123456789abcdef0123456789abcdef"
	e := &Event{Annotations: []byte(`{
		"observe.optionsrecord.io/observation-1": "` + id + `",
		"observe.optionsrecord.io/observation-2": "0123456789ABCDEF0123456789ABCDEF",
		"observe.optionsrecord.io/observation-3": "' OR 1=1 --",
		"observe.optionsrecord.io/other": "fedcba9876543210fedcba9876543210",
		"mutation.webhook.admission.k8s.io/observation-4": "fedcba9876543210fedcba9876543210"}`)}
	if got := Claims(e); !slices.Equal(got, []string{id}) {
		t.Errorf("claims %v, want [%s]", got, id)
	}
	for _, ann := range []string{``, `{}`, `not json`, `{"observe.optionsrecord.io/observation": 3}`} {
		if got := Claims(&Event{Annotations: []byte(ann)}); got != nil {
			t.Errorf("claims of %q: %v, want none", ann, got)
		}
	}
}

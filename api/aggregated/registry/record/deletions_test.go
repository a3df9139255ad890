package record

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/fields"
)

// TestDeletionFieldSelectors: each selectable field narrows the history
// query; what kubectl cannot mean is refused with the supported list.
func TestDeletionFieldSelectors(t *testing.T) {
	t.Parallel()
	s := newDeletionStorage(nil, nil, "e2e", true)
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	key := strings.Repeat("ab", 32)
	tests := []struct {
		sel     string
		check   func(selected) bool
		wantErr string
	}{
		{sel: "", check: func(x selected) bool { return x.filter.Group == nil && x.filter.Resource == "" && x.since.IsZero() }},
		{sel: "object.resource=configmaps,object.name=app", check: func(x selected) bool {
			return x.filter.Resource == "configmaps" && x.filter.Name == "app"
		}},
		{sel: "object.apiGroup=", check: func(x selected) bool { return x.filter.Group != nil && *x.filter.Group == "" }},
		{sel: "actor.username==bob", check: func(x selected) bool { return x.filter.User == "bob" }},
		{sel: "metadata.name=u-1." + key, check: func(x selected) bool { return x.filter.UID == "u-1" }},
		{sel: "metadata.namespace=prod", check: func(x selected) bool { return x.filter.Resource == "" }},
		{sel: "since=-24h,until=2026-11-23T09:00:00Z", check: func(x selected) bool {
			return x.since.Equal(now.Add(-24*time.Hour)) && x.until.Equal(time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
		}},
		{sel: "actor.username!=bob", wantErr: "only = is supported"},
		{sel: "object.name=a,object.name=deployer", wantErr: "object.name is given more than once"},
		{sel: "since=-1h,since=-24h", wantErr: "since is given more than once"},
		{sel: "spec.verb=delete", wantErr: "not supported for deletions (supported: metadata.name, metadata.namespace, object.apiGroup"},
		{sel: "since=yesterday", wantErr: "RFC 3339"},
		{sel: "metadata.name=not-a-record-name", wantErr: "not the name of a deletion"},
	}
	for _, tt := range tests {
		t.Run(tt.sel, func(t *testing.T) {
			sel, err := fields.ParseSelector(tt.sel)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.fieldSelector(context.Background(), sel, now)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !tt.check(got) {
				t.Errorf("%q: %+v, %v", tt.sel, got, err)
			}
		})
	}
}

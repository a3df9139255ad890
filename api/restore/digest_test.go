package restore

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore/digest"
)

// TestPlanDigestCoversEveryField: the digest of a plan survives its
// round trip through the restores table (JSON in, JSON out) and changes
// with any field of any step, the pinned state's digest included.
func TestPlanDigestCoversEveryField(t *testing.T) {
	t.Parallel()
	steps := func() []Step {
		return []Step{{Index: 0, Action: ActionUpdate, Object: ObjectRef{APIVersion: "v1", Resource: "configmaps", Namespace: "shop", Name: "app"},
			Source: &history.Version{UID: "u1", VersionKey: strings.Repeat("ab", 32)}, Live: &LiveRef{UID: "u1", ResourceVersion: "7"},
			Changes:     []history.DiffChange{{Op: "replace", Path: "/data/v", From: "bob", To: map[string]any{"b": 1.5, "a": []any{"x"}}}},
			StateDigest: digest.Of([]byte(`{"data":{"v":"alice"}}`))},
			{Index: 1, Action: ActionDelete, Object: ObjectRef{APIVersion: "v1", Resource: "configmaps", Namespace: "shop", Name: "junk"},
				Live: &LiveRef{UID: "u2", ResourceVersion: "9"}, Reason: "bob created it"}}
	}
	want := PlanDigest(steps())
	if !strings.HasPrefix(want, "sha256:") || len(want) != len("sha256:")+64 {
		t.Fatalf("digest %q", want)
	}
	b, _ := json.Marshal(steps())
	var back []Step
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got := PlanDigest(back); got != want {
		t.Errorf("after a round trip: %s, want %s", got, want)
	}
	for name, change := range map[string]func(s []Step) []Step{
		"action":       func(s []Step) []Step { s[0].Action = ActionCreate; return s },
		"name":         func(s []Step) []Step { s[1].Object.Name = "other"; return s },
		"source":       func(s []Step) []Step { s[0].Source.VersionKey = strings.Repeat("cd", 32); return s },
		"live":         func(s []Step) []Step { s[1].Live.ResourceVersion = "10"; return s },
		"change value": func(s []Step) []Step { s[0].Changes[0].To = "mallory"; return s },
		"state":        func(s []Step) []Step { s[0].StateDigest = digest.Of([]byte(`{"data":{"v":"mallory"}}`)); return s },
		"order":        func(s []Step) []Step { s[0], s[1] = s[1], s[0]; return s },
		"one more":     func(s []Step) []Step { return append(s, s[1]) },
		"none":         func([]Step) []Step { return nil },
	} {
		if PlanDigest(change(steps())) == want {
			t.Errorf("a change of %s keeps the digest", name)
		}
	}
}

package format

import (
	"testing"

	record "github.com/options-record/options-record/api/record/v1alpha1"
)

// TestCellsAreOneLineOfText: recorded strings cannot break a table or
// drive the terminal.
func TestCellsAreOneLineOfText(t *testing.T) {
	for in, want := range map[string]string{
		"app-config":            "app-config",
		"":                      "<none>",
		"a\nb":                  `"a\nb"`,
		"tab\there":             `"tab\there"`,
		"\x1b[31mred":           `"\x1b[31mred"`,
		"evil\u202etxt.exe":     `"evil\u202etxt.exe"`,
		"naïve-日本":              "naïve-日本",
		"<script>x</script>":    `"<script>x</script>"`, // begins with "<", as the tables' own <none>
		"a<script>x</script>":   "a<script>x</script>",  // a terminal shows markup as text
		"<none>":                `"<none>"`,             // a user named so is no empty cell
		"<garbage-collector>":   `"<garbage-collector>"`,
		"carriage\rreturn":      `"carriage\rreturn"`,
		"nul\x00byte":           `"nul\x00byte"`,
		"zero\u200bwidth space": `"zero\u200bwidth space"`,
		"no\u00a0break":         `"no\u00a0break"`, // issue 31: sql quoted it, the plugin did not
		"hangul\u3164filler":    `"hangul\u3164filler"`,
		`"a\u202eb"`:            `"\"a\\u202eb\""`, // typed out, quotes included: not the escaped U+202E
		" <none>":               `" <none>"`,
		"trailing ":             `"trailing "`,
	} {
		if got := Cell(in); got != want {
			t.Errorf("Cell(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestDeleterCell: the garbage collector's and the namespace controller's
// service accounts, by their exact names and acting as themselves, are
// the table's words; no other name reads as one of them (a name that
// begins with "<" is quoted).
func TestDeleterCell(t *testing.T) {
	const gc = "system:serviceaccount:kube-system:generic-garbage-collector"
	for _, c := range []struct{ user, as, want string }{
		{gc, "", "<garbage-collector>"},
		{"system:serviceaccount:kube-system:namespace-controller", "", "<namespace-controller>"},
		{gc, "bob", gc + " (as bob)"},
		{gc + "x", "", gc + "x"},
		{"system:serviceaccount:other:generic-garbage-collector", "", "system:serviceaccount:other:generic-garbage-collector"},
		{"<garbage-collector>", "", `"<garbage-collector>"`},
		{"<none>", "", `"<none>"`},
		{"<x", "y", `"<x" (as y)`},
		{"bob", "<none>", `bob (as "<none>")`},
		{"<none>", "<garbage-collector>", `"<none>" (as "<garbage-collector>")`},
		{"bob", "", "bob"},
		{"", "", "<none>"},
		// No name reads as an impersonation, nor as a quoted name.
		{"mallory (as alice)", "", `"mallory (as alice)"`},
		{"mallory", "alice", "mallory (as alice)"},
		{`"<none>"`, "", `"\"<none>\""`},
		{" <none>", "", `" <none>"`},
	} {
		if got := DeleterCell(c.user, c.as); got != c.want {
			t.Errorf("DeleterCell(%q, %q) = %q, want %q", c.user, c.as, got, c.want)
		}
	}
}

// TestActorOfVersionsWithoutAnActor: a version the record took itself
// says how it was taken.
func TestActorOfVersionsWithoutAnActor(t *testing.T) {
	for verb, want := range map[string]string{"baseline": "a baseline", "admission": "an admission observation"} {
		if got := ActorOf(&record.ChangeRecord{Verb: verb}); got != want {
			t.Errorf("%s: %q, want %q", verb, got, want)
		}
	}
}

// TestActorOfUserNamedLikeTheRecord: a user named after the words for a
// version the record took itself does not read as one.
func TestActorOfUserNamedLikeTheRecord(t *testing.T) {
	for _, c := range []struct{ user, as, want string }{
		{"a baseline", "", `"a baseline"`},
		{"an admission observation", "", `"an admission observation"`},
		{"a baseline", "bob", "a baseline (as bob)"},
		{"bob", "", "bob"},
	} {
		got := ActorOf(&record.ChangeRecord{Verb: "update", Actor: &record.Actor{Username: c.user, ImpersonatedUser: c.as}})
		if got != c.want {
			t.Errorf("ActorOf(%q as %q) = %q, want %q", c.user, c.as, got, c.want)
		}
		for _, verb := range []string{"baseline", "admission"} {
			if got == ActorOf(&record.ChangeRecord{Verb: verb}) {
				t.Errorf("user %q reads as the record's own %s: %q", c.user, verb, got)
			}
		}
	}
}

package escape

import "testing"

// TestDeleter: the garbage collector's and the namespace controller's
// service accounts, by their exact names, are the tables' words; no
// other name reads as one of them (a name that begins with "<" is
// quoted), and hidden characters are escaped as always.
func TestDeleter(t *testing.T) {
	const gc = "system:serviceaccount:kube-system:generic-garbage-collector"
	for in, want := range map[string]string{
		gc: "<garbage-collector>",
		"system:serviceaccount:kube-system:namespace-controller": "<namespace-controller>",
		gc + "x": gc + "x",
		"system:serviceaccount:other:generic-garbage-collector": "system:serviceaccount:other:generic-garbage-collector",
		"<garbage-collector>":       `"<garbage-collector>"`,
		"<none>":                    `"<none>"`,
		"<garbage-collector>\u200b": `"<garbage-collector>\u200b"`,
		"bob":                       "bob",
		"eve\nroot":                 `"eve\nroot"`,
	} {
		if got := Deleter(in); got != want {
			t.Errorf("Deleter(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCell: a recorded string that begins with "<" is quoted, so it reads
// as none of the tables' own words; any other is Quote.
func TestCell(t *testing.T) {
	for in, want := range map[string]string{
		"<none>":              `"<none>"`,
		"<baseline>":          `"<baseline>"`,
		"<garbage-collector>": `"<garbage-collector>"`,
		"<":                   `"<"`,
		`<"q">`:               `"<\"q\">"`,
		"<none>\x1b[2K":       `"<none>\x1b[2K"`,
		"bob":                 "bob",
		"bob <none>":          "bob <none>",
		`"<none>"`:            `"\"<none>\""`,
		`"a\u202eb"`:          `"\"a\\u202eb\""`,
		" <none>":             `" <none>"`,
		"bob ":                `"bob "`,
		"a b":                 "a b",
		"mallory (as alice)":  "mallory (as alice)",
		"":                    "",
		"eve\nroot":           `"eve\nroot"`,
		"system:serviceaccount:kube-system:generic-garbage-collector": "system:serviceaccount:kube-system:generic-garbage-collector",
	} {
		if got := Cell(in); got != want {
			t.Errorf("Cell(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestActor: a user and the identity they acted as, each quoted when it
// could read as the other's part (it holds a parenthesis): no name reads
// as an impersonation, nor one impersonation as another.
func TestActor(t *testing.T) {
	for _, c := range []struct{ user, as, want string }{
		{"bob", "", "bob"},
		{"", "", "<none>"},
		{"", "alice", "<none> (as alice)"},
		{"<none>", "", `"<none>"`},
		{"mallory", "alice", "mallory (as alice)"},
		{"mallory (as alice)", "", `"mallory (as alice)"`},
		{"a (as", "b", `"a (as" (as b)`},
		{"a", "(as b", `a (as "(as b")`},
		{"mallory", "alice) (as bob", `mallory (as "alice) (as bob")`},
	} {
		if got := Actor(c.user, c.as); got != c.want {
			t.Errorf("Actor(%q, %q) = %s, want %s", c.user, c.as, got, c.want)
		}
	}
	if got := Deleter("mallory (as alice)"); got == Actor("mallory", "alice") {
		t.Errorf("Deleter(%q) = %s reads as mallory acting as alice", "mallory (as alice)", got)
	}
}

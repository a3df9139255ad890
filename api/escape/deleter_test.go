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
		"":                    "",
		"eve\nroot":           `"eve\nroot"`,
		"system:serviceaccount:kube-system:generic-garbage-collector": "system:serviceaccount:kube-system:generic-garbage-collector",
	} {
		if got := Cell(in); got != want {
			t.Errorf("Cell(%q) = %s, want %s", in, got, want)
		}
	}
}

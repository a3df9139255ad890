package format

import (
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/options-record/options-record/api/escape"
	record "github.com/options-record/options-record/api/record/v1alpha1"
)

// Cell makes a recorded string safe for one cell of a terminal table:
// escape.Cell (quoted when it could drive the terminal, or read as
// another cell: one beginning with "<" as the tables' own words, <none>
// and the like, or with a double quote or a space), and <none> for an
// empty one.
func Cell(s string) string {
	if s == "" {
		return "<none>"
	}
	return escape.Cell(s)
}

// CellOrNone is s (a cell already), or <none> for an empty one.
func CellOrNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// ResourceCell is resource.group, as kubectl names types.
func ResourceCell(o record.ObjectReference) string {
	if o.APIGroup == "" {
		return Cell(o.Resource)
	}
	return Cell(o.Resource + "." + o.APIGroup)
}

// ActorCell is who did it: the user, and the identity they acted as
// (escape.Actor: a name that could read as another cell, or as an
// impersonation, is quoted).
func ActorCell(user, as string) string { return escape.Actor(user, as) }

// DeleterCell is who deleted (or changed: record history's BY), for a
// table that must fit 120 columns:
// the garbage collector's and the namespace controller's service
// accounts, acting as themselves, as their words (escape.Deleter, the
// rule the aggregated API's table follows too); everyone else as
// ActorCell. -o wide shows the full name (ActorCell).
func DeleterCell(user, as string) string {
	if user != "" && as == "" {
		return escape.Deleter(user)
	}
	return ActorCell(user, as)
}

// ActorOf is who made a recorded change, or "a baseline" ("an admission
// observation": the state an admission review showed before a write).
// A user named after those words is quoted (escape.Quoted), so that no
// user reads as the record's own.
func ActorOf(c *record.ChangeRecord) string {
	if c.Actor == nil && c.Verb == "admission" {
		return admissionWords
	}
	if c.Actor == nil {
		return baselineWords
	}
	s := ActorCell(c.Actor.Username, c.Actor.ImpersonatedUser)
	if s == admissionWords || s == baselineWords {
		return escape.Quoted(c.Actor.Username)
	}
	return s
}

// The words for a version the record took itself (ActorOf).
const (
	baselineWords  = "a baseline"
	admissionWords = "an admission observation"
)

// Now is the clock of ages, and of times given as a duration before now
// (fixed in tests).
var Now = time.Now

// Age is how long ago t was, as kubectl shows it.
func Age(t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(Now().Sub(t))
}

// Short shortens a long identifier (a uid) for a table.
func Short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

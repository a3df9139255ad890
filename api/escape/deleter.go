package escape

import "strings"

// controllerWords are the cluster's own deleters, by their exact user
// names, and the word a table shows for each: the namespace controller's
// and the garbage collector's deletions of a cascade. Their full names
// (59 characters for the garbage collector's) would make every row of a
// table of deletions too wide for a terminal.
var controllerWords = map[string]string{
	"system:serviceaccount:kube-system:generic-garbage-collector": "<garbage-collector>",
	"system:serviceaccount:kube-system:namespace-controller":      "<namespace-controller>",
}

// Deleter is a recorded user name for a narrow table cell (who deleted):
// the garbage collector's and the namespace controller's service
// accounts, by their exact names only, as the words <garbage-collector>
// and <namespace-controller>, in angle brackets as the tables' own <none>;
// any other name as User, so that no name a user can take (a static
// token's, an OIDC claim) reads as one of those words, nor as a user
// acting as another (Actor). The full name belongs in the wide output,
// written by Actor.
func Deleter(user string) string {
	if w, ok := controllerWords[user]; ok {
		return w
	}
	return User(user)
}

// User is a recorded user name for a cell that may also show whom they
// acted as (Actor): Cell, but always quoted when it holds a parenthesis,
// so that a user named "mallory (as alice)" does not read as mallory
// acting as alice, nor "a (as" acting as b as a acting as "(as b".
func User(s string) string {
	if strings.ContainsAny(s, "()") {
		return Quoted(s)
	}
	return Cell(s)
}

// Actor is who did something, for a table cell: the user, and the
// identity they acted as (impersonation), each as User ("<none>" for an
// empty user): "bob", "bob (as alice)". No two (user, as) give the same
// cell.
func Actor(user, as string) string {
	u := "<none>"
	if user != "" {
		u = User(user)
	}
	if as == "" {
		return u
	}
	return u + " (as " + User(as) + ")"
}

// Cell is a recorded string for a table cell whose own words are in
// angle brackets (<none>, <baseline>, <unknown>, <garbage-collector>):
// Quote, but always quoted when it could read as another cell: when it
// begins with "<" (a user named <none> would read as an empty cell, one
// named <garbage-collector> as the garbage collector), with a double
// quote (a name typed as "<none>" or "a\u202eb", quotes included, would
// read as those quoted), or begins or ends with a space (lost between
// the columns). A cell left as it is is its string; a quoted one reads
// back as its string (strconv.Unquote): no two strings give one cell.
func Cell(s string) string {
	if strings.HasPrefix(s, "<") || strings.HasPrefix(s, `"`) ||
		strings.HasPrefix(s, " ") || strings.HasSuffix(s, " ") {
		return Quoted(s)
	}
	return Quote(s)
}

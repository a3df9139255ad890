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
// any other name as Cell, so that no name a user can take (a static
// token's, an OIDC claim) reads as one of those words. The full name
// belongs in the wide output, written by Cell too.
func Deleter(user string) string {
	if w, ok := controllerWords[user]; ok {
		return w
	}
	return Cell(user)
}

// Cell is a recorded string for a table cell whose own words are in
// angle brackets (<none>, <baseline>, <unknown>, <garbage-collector>):
// Quote, but always quoted when it begins with "<", so that a user named
// <none> does not read as an empty cell, nor one named
// <garbage-collector> as the garbage collector.
func Cell(s string) string {
	if strings.HasPrefix(s, "<") {
		return Quoted(s)
	}
	return Quote(s)
}

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
// any other name as Quote, but always quoted when it begins with "<", so
// that no name a user can take (a static token's, an OIDC claim) reads as
// one of those words. The full name belongs in the wide output.
func Deleter(user string) string {
	if w, ok := controllerWords[user]; ok {
		return w
	}
	if strings.HasPrefix(user, "<") {
		return Quoted(user)
	}
	return Quote(user)
}

// Package cmdutil is what the verbs of kubectl record share, as kubectl's
// pkg/cmd/util is for kubectl's: the Factory (the kubeconfig and
// --record-server flags, the typed client of the record, the namespace),
// the errors and their exit codes, TYPE/NAME resolved as kubectl resolves
// it, field selectors, paging, the --user/--since window, -o with
// kubectl's printers, completion, and the requests of the record API more
// than one verb makes (an object's versions, a Restore, a plan).
//
// It never reads os.Args, never exits, and writes only to the streams it
// is given; the text it prints goes through package format.
package cmdutil

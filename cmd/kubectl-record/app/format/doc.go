// Package format is how kubectl record shows the record on a terminal:
// recorded strings as table cells (one line of text, escaped by
// api/escape), tables as kubectl get prints them, ages, a diff's value
// lines, and what a restore or a plan's step did.
//
// Every string it is given may have been written by a hostile cluster
// user: nothing it returns ends a line or drives the terminal. It never
// talks to the cluster, reads flags or writes anywhere but the writer it
// is given.
package format

// Package export is kubectl record export: a namespace as it was at a
// time, written as one clean manifest per object into a directory of the
// caller's own (made 0700, files 0600, never over a file, never through
// another user's link), the file backup operators know, served from the
// record.
package export

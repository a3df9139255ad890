// Package history is kubectl record history: every recorded version of an
// object, newest first, across re-creations, with the version names that
// diff, manifest and restore take.
package history

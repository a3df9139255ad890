// Package activity is kubectl record activity: what one identity did,
// its changes and the writes the cluster refused it, newest first, in the
// namespaces the caller may read.
package activity

// Package restore is kubectl record restore: a recorded version put back
// as the caller, after a server-side dry run is shown and confirmed, the
// real run pinned to the state the dry run showed.
package restore

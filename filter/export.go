package filter

import auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

// IsDryRun reports whether a mutating request was a dry run (dryRun in the
// request URI, or in the DeleteOptions body of a delete), by the same test
// Match uses.
func IsDryRun(ev *auditv1.Event) bool { return isDryRun(ev, parseVerb(ev.Verb)) }

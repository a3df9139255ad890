package filter

import (
	"bytes"
	"net/url"
	"strings"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// IsDryRun reports whether the apiserver ran ev's request as a dry run. It
// mirrors how the apiserver reads the option, because a mismatch either
// way is wrong: reading a real change as a dry run would let a crafted
// request hide it.
//
//   - create, update, patch: the dryRun query parameter, parsed as
//     net/url.ParseQuery parses it (pairs with ';' or bad escapes are
//     ignored by the apiserver, so they are ignored here too).
//   - delete, deletecollection: a non-empty request body replaces the query
//     parameters entirely, so when the event carries the body (audit level
//     Request or higher) its DeleteOptions.dryRun decides. Without a body
//     the query decides; at audit level Metadata the event cannot show
//     whether a body overrode it.
//
// Any dryRun value counts: the apiserver rejects every value but "All", and
// a rejected request changed nothing either.
//
// Match applies it before keeping a change; callers that must agree with
// Match use it too (rule sync ignores a dry-run write of a rule object).
func IsDryRun(ev *auditv1.Event) bool { return isDryRun(ev, parseVerb(ev.Verb)) }

// isDryRun is IsDryRun for an already parsed verb.
func isDryRun(ev *auditv1.Event, verb verbBit) bool {
	if verb&(verbDelete|verbDeleteCollection) != 0 && ev.RequestObject != nil && len(ev.RequestObject.Raw) > 0 {
		return deleteOptionsDryRun(ev.RequestObject.Raw)
	}
	return queryDryRun(ev.RequestURI)
}

var (
	dryRunKey     = []byte("dryRun")
	unicodeEscape = []byte(`\u`)
)

// deleteOptionsDryRun reports whether a DeleteOptions body sets dryRun. The
// audit log holds the body as the apiserver re-encoded it, but the decode is
// case-sensitive like the apiserver's all the same.
func deleteOptionsDryRun(raw []byte) bool {
	if !bytes.Contains(raw, dryRunKey) && !bytes.Contains(raw, unicodeEscape) {
		return false
	}
	var opts struct {
		DryRun []string `json:"dryRun"`
	}
	if err := utiljson.Unmarshal(raw, &opts); err != nil {
		// The apiserver could not have decoded it either, so the request
		// failed and changed nothing; but say "not a dry run" so the
		// failed attempt is kept as an event.
		return false
	}
	return len(opts.DryRun) > 0
}

// queryDryRun reports whether the query of a request URI has a dryRun
// parameter as net/url.ParseQuery would see it. It allocates only when a key
// is percent-encoded.
func queryDryRun(requestURI string) bool {
	_, query, ok := strings.Cut(requestURI, "?")
	if !ok {
		return false
	}
	if !strings.Contains(query, "dryRun") && !strings.Contains(query, "%") {
		return false
	}
	for query != "" {
		var pair string
		pair, query, _ = strings.Cut(query, "&")
		if pair == "" || strings.Contains(pair, ";") {
			continue
		}
		key, value, _ := strings.Cut(pair, "=")
		if strings.ContainsAny(key, "%+") {
			k, err := url.QueryUnescape(key)
			if err != nil {
				continue
			}
			key = k
		}
		if key != "dryRun" {
			continue
		}
		if _, err := url.QueryUnescape(value); err != nil {
			continue
		}
		return true
	}
	return false
}

package aggregated

import (
	"net/http"
	"strings"
)

// refuseImpersonation answers 403 to a request that asks to impersonate.
// The kube-apiserver applies impersonation itself and proxies the resulting
// identity in X-Remote-* headers, without the Impersonate-* ones; a request
// that carries them did not come that way, and the server must not act on
// them (the generic handler chain would).
func refuseImpersonation(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k := range r.Header {
			if strings.HasPrefix(strings.ToLower(k), "impersonate-") {
				http.Error(w, "impersonation is not served here: go through the kube-apiserver", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

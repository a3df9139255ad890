package restoreapi

import (
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/options-record/options-record/api/errs"
)

// retryAfter is the Retry-After (seconds) of a 429.
const retryAfter = "1"

// ErrorBody is the JSON body of every error answer.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong.
type ErrorDetail struct {
	Code    int    `json:"code" doc:"HTTP status"`
	Reason  string `json:"reason" doc:"BadRequest, Unauthorized, Forbidden, NotFound, Conflict, Unprocessable or InternalError; for an answer of the cluster to an impersonated call, its reason"`
	Message string `json:"message"`
	// FromCluster is true when the cluster refused an impersonated call
	// (its RBAC or admission decided, not this API).
	FromCluster bool `json:"fromCluster,omitempty" doc:"the cluster answered this to the call made as the caller"`
}

// writeError answers err with the status errs.Status gives it.
// Internal errors are logged and answered with a generic message: their
// text may hold details of the database.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	code, reason, fromCluster := errs.Status(err)
	msg := err.Error()
	if code == http.StatusInternalServerError {
		log.Error("restore API request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		msg = "internal error (logged by the server)"
	}
	switch code {
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", retryAfter)
	case http.StatusGatewayTimeout:
		msg = "the request ran out of time (its deadline, or the database's statement timeout): narrow it (namespace, resource, since/until)"
	}
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="options-record"`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(ErrorBody{Error: ErrorDetail{Code: code, Reason: reason, Message: msg, FromCluster: fromCluster}})
}

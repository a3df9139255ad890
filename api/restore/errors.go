package restore

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/jackc/pgx/v5/pgconn"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/options-record/options-record/store"
)

// The errors handlers return; writeError maps them to HTTP statuses. Wrap
// them with what went wrong: the message is the wrapped text.
var (
	ErrInvalid         = errors.New("invalid request")    // 400
	ErrUnauthenticated = errors.New("unauthenticated")    // 401
	ErrForbidden       = errors.New("forbidden")          // 403
	ErrNotFound        = errors.New("not found")          // 404
	ErrConflict        = errors.New("conflict")           // 409
	ErrUnprocessable   = errors.New("cannot be restored") // 422
	ErrTooManyRequests = errors.New("too many requests")  // 429, with Retry-After
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

// errorStatus maps an error to its status and reason. Errors of the
// cluster's API (impersonated calls) keep the cluster's status.
func errorStatus(err error) (int, string, bool) {
	switch {
	case errors.Is(err, ErrInvalid):
		return http.StatusBadRequest, "BadRequest", false
	case errors.Is(err, ErrUnauthenticated):
		return http.StatusUnauthorized, "Unauthorized", false
	case errors.Is(err, ErrForbidden):
		return http.StatusForbidden, "Forbidden", false
	case errors.Is(err, ErrNotFound), errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound, "NotFound", false
	case errors.Is(err, ErrConflict):
		return http.StatusConflict, "Conflict", false
	case errors.Is(err, ErrUnprocessable):
		return http.StatusUnprocessableEntity, "Unprocessable", false
	case errors.Is(err, ErrTooManyRequests):
		return http.StatusTooManyRequests, "TooManyRequests", false
	case timedOut(err):
		return http.StatusGatewayTimeout, "Timeout", false
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Code >= 400 {
		s := st.Status()
		return int(s.Code), string(s.Reason), true
	}
	return http.StatusInternalServerError, "InternalError", false
}

// writeError answers err. Internal errors are logged and answered with a
// generic message: their text may hold details of the database.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	code, reason, fromCluster := errorStatus(err)
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

// timedOut reports whether err is the end of the request's deadline or a
// statement the database cancelled (statement_timeout: query_canceled).
func timedOut(err error) bool {
	var pe *pgconn.PgError
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &pe) && pe.Code == "57014"
}

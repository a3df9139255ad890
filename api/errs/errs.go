package errs

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The errors the services return; Status maps them to a status code. Wrap
// them with what went wrong: the message is the wrapped text, and it names
// nothing the caller may not read.
var (
	ErrInvalid         = errors.New("invalid request")    // 400
	ErrUnauthenticated = errors.New("unauthenticated")    // 401
	ErrForbidden       = errors.New("forbidden")          // 403
	ErrNotFound        = errors.New("not found")          // 404
	ErrConflict        = errors.New("conflict")           // 409
	ErrExists          = errors.New("already exists")     // 409, reason AlreadyExists
	ErrUnprocessable   = errors.New("cannot be restored") // 422
	ErrTooManyRequests = errors.New("too many requests")  // 429
)

// Status codes, as HTTP and Kubernetes' metav1.Status use them.
const (
	CodeBadRequest      = 400
	CodeUnauthorized    = 401
	CodeForbidden       = 403
	CodeNotFound        = 404
	CodeConflict        = 409
	CodeUnprocessable   = 422
	CodeTooManyRequests = 429
	CodeInternal        = 500
	CodeTimeout         = 504
)

// Status maps an error to its status code and reason. Errors of the
// cluster's API (impersonated calls) keep the cluster's status, and
// fromCluster says so.
func Status(err error) (code int, reason string, fromCluster bool) {
	switch {
	case errors.Is(err, ErrInvalid):
		return CodeBadRequest, "BadRequest", false
	case errors.Is(err, ErrUnauthenticated):
		return CodeUnauthorized, "Unauthorized", false
	case errors.Is(err, ErrForbidden):
		return CodeForbidden, "Forbidden", false
	case errors.Is(err, ErrNotFound):
		return CodeNotFound, "NotFound", false
	case errors.Is(err, ErrExists):
		return CodeConflict, "AlreadyExists", false
	case errors.Is(err, ErrConflict):
		return CodeConflict, "Conflict", false
	case errors.Is(err, ErrUnprocessable):
		return CodeUnprocessable, "Unprocessable", false
	case errors.Is(err, ErrTooManyRequests):
		return CodeTooManyRequests, "TooManyRequests", false
	case TimedOut(err):
		return CodeTimeout, "Timeout", false
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Code >= 400 {
		s := st.Status()
		return int(s.Code), string(s.Reason), true
	}
	return CodeInternal, "InternalError", false
}

// TimedOut reports whether err is the end of the request's deadline or a
// statement the database cancelled (statement_timeout: query_canceled,
// SQLSTATE 57014; the driver's *pgconn.PgError has SQLState).
func TimedOut(err error) bool {
	var pe interface{ SQLState() string }
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &pe) && pe.SQLState() == "57014"
}

package registry

import (
	"fmt"
	"log/slog"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/api/escape"
)

// StatusError turns an error of the history or restore service into the
// Kubernetes status a client expects, with the status code the services
// give it (errs.Status). Internal errors say nothing of the database:
// their text may name its details.
func StatusError(log *slog.Logger, err error, res schema.GroupResource, name string) error {
	code, reason, fromCluster := errs.Status(err)
	if fromCluster {
		return err // the cluster's own answer to a call made as the caller
	}
	switch code {
	case http.StatusBadRequest:
		return apierrors.NewBadRequest(err.Error())
	case http.StatusForbidden:
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: int32(code),
			Reason: metav1.StatusReasonForbidden, Message: err.Error(),
			Details: &metav1.StatusDetails{Group: res.Group, Kind: res.Resource, Name: name}}}
	case http.StatusNotFound:
		return apierrors.NewNotFound(res, name)
	case http.StatusConflict:
		return apierrors.NewConflict(res, name, err)
	case http.StatusUnprocessableEntity:
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: int32(code),
			Reason: metav1.StatusReasonInvalid, Message: err.Error(),
			Details: &metav1.StatusDetails{Group: res.Group, Kind: res.Resource, Name: name}}}
	case http.StatusTooManyRequests:
		return apierrors.NewTooManyRequests(err.Error(), 1)
	case http.StatusGatewayTimeout:
		return apierrors.NewTimeoutError("the request ran out of time (its deadline, or the database's statement timeout): narrow it with field selectors", 1)
	}
	log.Error("aggregated API request failed", "resource", res.String(), "name", name, "reason", reason, "err", err)
	return apierrors.NewInternalError(fmt.Errorf("internal error (logged by the server)"))
}

// ErrUnexpectedType is the internal error of a storage handed an object
// of another kind.
func ErrUnexpectedType(obj runtime.Object) error {
	return fmt.Errorf("unexpected object type %T", obj)
}

// StatusMessage is the message of err for a restore's status: internal
// errors are logged and said generically, as StatusError does.
func StatusMessage(log *slog.Logger, err error) (int32, string) {
	code, _, fromCluster := errs.Status(err)
	if code == http.StatusInternalServerError && !fromCluster {
		log.Error("aggregated API restore failed", "err", err)
		return int32(code), "internal error (logged by the server)"
	}
	return int32(code), err.Error()
}

// Cell is a recorded string as a Table cell: kubectl prints cells to a
// terminal as they are, and every recorded value was written by some
// cluster user (a username from an OIDC claim, a user agent), so one with
// a hidden character, or one that begins with "<" (a user named <none>
// or <garbage-collector> in -o wide's full names), is shown quoted and
// escaped, by the one rule (escape.Cell).
func Cell(s string) string { return escape.Cell(s) }

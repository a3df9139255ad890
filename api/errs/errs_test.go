package errs_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/store"
)

func TestStatus(t *testing.T) {
	for _, tc := range []struct {
		err         error
		code        int
		reason      string
		fromCluster bool
	}{
		{fmt.Errorf("%w: bad cursor", errs.ErrInvalid), 400, "BadRequest", false},
		{fmt.Errorf("%w: no caller", errs.ErrUnauthenticated), 401, "Unauthorized", false},
		{errs.ErrForbidden, 403, "Forbidden", false},
		{fmt.Errorf("%w: no object", errs.ErrNotFound), 404, "NotFound", false},
		{fmt.Errorf("read: %w", store.ErrNotFound), 404, "NotFound", false},
		{errs.ErrExists, 409, "AlreadyExists", false},
		{errs.ErrConflict, 409, "Conflict", false},
		{errs.ErrUnprocessable, 422, "Unprocessable", false},
		{errs.ErrTooManyRequests, 429, "TooManyRequests", false},
		{context.DeadlineExceeded, 504, "Timeout", false},
		{fmt.Errorf("query: %w", &pgconn.PgError{Code: "57014"}), 504, "Timeout", false},
		{&pgconn.PgError{Code: "40001"}, 500, "InternalError", false},
		{apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", fmt.Errorf("no")), 403, "Forbidden", true},
		{fmt.Errorf("boom"), 500, "InternalError", false},
	} {
		code, reason, fromCluster := errs.Status(tc.err)
		if code != tc.code || reason != tc.reason || fromCluster != tc.fromCluster {
			t.Errorf("Status(%v) = %d %s %v, want %d %s %v", tc.err, code, reason, fromCluster, tc.code, tc.reason, tc.fromCluster)
		}
	}
}

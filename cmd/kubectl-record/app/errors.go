package app

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// explain turns an answer of the record API into an error that says what
// to do, with the exit code of its kind. what is the request ("list
// deletions in namespace shop").
func explain(err error, what string) error {
	if err == nil {
		return nil
	}
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		return fmt.Errorf("%s: %w", what, err)
	}
	st := se.Status()
	switch {
	case apierrors.IsNotFound(err) && (st.Details == nil || st.Details.Name == ""):
		return &codedError{4, fmt.Errorf("the record API (record.optionsrecord.io/v1alpha1) is not installed in this cluster: "+
			"ask its operator to install deploy/components/aggregated-api (%s)", st.Message)}
	case apierrors.IsNotFound(err):
		return &codedError{4, fmt.Errorf("%s: not found in the record (or not visible to you): %s", what, st.Message)}
	case apierrors.IsForbidden(err):
		return &codedError{3, fmt.Errorf("you may not %s: ask for the options-record-reader role (RBAC) in that namespace (%s)", what, st.Message)}
	case apierrors.IsUnauthorized(err):
		return &codedError{3, fmt.Errorf("not authenticated to the cluster: check your kubeconfig's credentials (%s)", st.Message)}
	case apierrors.IsServiceUnavailable(err):
		return fmt.Errorf("the record API does not answer (%s): try again, or ask its operator", st.Message)
	}
	return fmt.Errorf("%s: %w", what, err)
}

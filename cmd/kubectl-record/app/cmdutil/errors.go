package cmdutil

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The plugin's exit codes.
const (
	ExitError       = 1 // an error
	ExitUsage       = 2 // a usage error, or a restore not confirmed
	ExitForbidden   = 3 // refused by RBAC, or not authenticated
	ExitNotFound    = 4 // not found, or the record API not installed
	ExitNotRestored = 5 // a restore refused or failed
)

// usageError is a mistake in the command line: exit code 2.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// Usage marks err as a mistake in the command line (exit code 2).
func Usage(err error) error { return usageError{err} }

// Usagef is Usage(fmt.Errorf(format, a...)).
func Usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// IsUsage reports whether err is a mistake in the command line.
func IsUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

// codedError carries the exit code of an error the plugin explains.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// WithExitCode gives err the exit code code.
func WithExitCode(code int, err error) error { return &codedError{code, err} }

// ExitCode is the exit code of err: 0 for none, the code WithExitCode
// gave it, 2 for a usage error, else 1.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var ce *codedError
	if errors.As(err, &ce) {
		return ce.code
	}
	if IsUsage(err) {
		return ExitUsage
	}
	return ExitError
}

// Explain turns an answer of the record API into an error that says what
// to do, with the exit code of its kind. what is the request ("list
// deletions in namespace shop").
func Explain(err error, what string) error {
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
		return &codedError{ExitNotFound, fmt.Errorf("the record API (record.optionsrecord.io/v1alpha1) is not installed in this cluster: "+
			"ask its operator to install deploy/components/aggregated-api (%s)", st.Message)}
	case apierrors.IsNotFound(err):
		return &codedError{ExitNotFound, fmt.Errorf("%s: not found in the record (or not visible to you): %s", what, st.Message)}
	case apierrors.IsForbidden(err):
		return &codedError{ExitForbidden, fmt.Errorf("you may not %s: ask for the options-record-reader role (RBAC) in that namespace (%s)", what, st.Message)}
	case apierrors.IsUnauthorized(err):
		return &codedError{ExitForbidden, fmt.Errorf("not authenticated to the cluster: check your kubeconfig's credentials (%s)", st.Message)}
	case apierrors.IsServiceUnavailable(err):
		return fmt.Errorf("the record API does not answer (%s): try again, or ask its operator", st.Message)
	}
	return fmt.Errorf("%s: %w", what, err)
}

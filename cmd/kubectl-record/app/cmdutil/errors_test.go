package cmdutil

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	record "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmdtesting"
)

// TestErrorsSayWhatToDo: the answers of the record API become errors that
// say what to do, with the exit code of their kind (testdata/errors.golden).
func TestErrorsSayWhatToDo(t *testing.T) {
	gr := schema.GroupResource{Group: record.GroupName, Resource: "deletions"}
	var out bytes.Buffer
	for _, c := range []struct {
		name string
		err  error
	}{
		{"the API is not installed", apierrors.NewGenericServerResponse(404, "list", gr, "", "", 0, false)},
		{"an object not found", apierrors.NewNotFound(gr, "5e0c.8c3b")},
		{"RBAC", apierrors.NewForbidden(gr, "", errors.New(`User "eve" cannot list resource "deletions" in API group "record.optionsrecord.io" in the namespace "shop"`))},
		{"no credentials", apierrors.NewUnauthorized("Unauthorized")},
		{"the API does not answer", apierrors.NewServiceUnavailable("the server is currently unable to handle the request")},
		{"a bad request", apierrors.NewBadRequest("field label nope not supported")},
		{"not an API answer", errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")},
	} {
		err := Explain(c.err, "list deletions in namespace shop")
		code := 1
		var ce *codedError
		if errors.As(err, &ce) {
			code = ce.code
		}
		fmt.Fprintf(&out, "%s: exit %d\n  %v\n", c.name, code, err)
	}
	cmdtesting.Golden(t, "errors.golden", out.Bytes())
}

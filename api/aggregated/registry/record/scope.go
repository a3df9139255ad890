package record

import (
	"context"
	"errors"
	"log/slog"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/options-record/options-record/api/aggregated/registry"
	"github.com/options-record/options-record/api/escape"
	"github.com/options-record/options-record/api/history"
	recordv1alpha1 "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/api/shortname"
)

// recordScope is what the read resources of the record (deletions,
// changes, attempts, each in a namespaced and a cluster-scoped kind) share:
// which scope a resource serves, and how a request's namespace, labels and
// limit narrow a list.
type recordScope struct {
	log        *slog.Logger
	hist       *history.Service
	cluster    string
	namespaced bool
	resource   schema.GroupResource
}

// newRecordScope is the scope of the namespaced resource named, or of its
// cluster-scoped kind ("cluster" + name).
func newRecordScope(log *slog.Logger, hist *history.Service, cluster, resource string, namespaced bool) recordScope {
	if !namespaced {
		resource = "cluster" + resource
	}
	return recordScope{log: log, hist: hist, cluster: cluster, namespaced: namespaced,
		resource: recordv1alpha1.SchemeGroupVersion.WithResource(resource).GroupResource()}
}

func (recordScope) Destroy()                  {}
func (s recordScope) NamespaceScoped() bool   { return s.namespaced }
func (recordScope) Categories() []string      { return []string{"optionsrecord"} }
func (s recordScope) GetSingularName() string { return strings.TrimSuffix(s.resource.Resource, "s") }

// serves says whether a record of an object in namespace (""
// cluster-scoped) is served by this resource in the request's namespace: a
// record is served under its object's scope and namespace only.
func (s recordScope) serves(ctx context.Context, namespace string) bool {
	if s.namespaced != (namespace != "") {
		return false
	}
	return !s.namespaced || namespace == genericapirequest.NamespaceValue(ctx)
}

// listNamespace is the namespace a list reads: the request's, "" for the
// cluster-scoped kind, nil for a namespaced list across all namespaces
// (kubectl -A), whose cluster-scoped records the list leaves out. A
// metadata.namespace field selector narrows a list across all namespaces
// to that one; one that contradicts the request's scope selects nothing
// (none is false).
func (s recordScope) listNamespace(ctx context.Context, sel fields.Selector) (ns *string, some bool) {
	req := genericapirequest.NamespaceValue(ctx)
	want, given := "", false
	if sel != nil {
		want, given = sel.RequiresExactMatch("metadata.namespace")
	}
	switch {
	case s.namespaced && req == "" && given && want == "":
		return nil, false // a namespaced resource has nothing in the cluster scope
	case s.namespaced && req == "" && given:
		return &want, true
	case s.namespaced && req == "":
		return nil, true
	case given && want != req:
		return nil, false
	}
	return &req, true
}

// requirements are a record list's field selector, each field once: a
// field given twice is refused (400), not read as its first or last
// value, so a value a client failed to escape ("object.name=a,
// object.name=b") cannot quietly select another object.
func requirements(sel fields.Selector) (fields.Requirements, error) {
	reqs := sel.Requirements()
	seen := make(map[string]bool, len(reqs))
	for _, r := range reqs {
		if seen[r.Field] {
			return nil, apierrors.NewBadRequest("field selector: " + r.Field + " is given more than once (escape ',', '=' and '\\' in a value with a backslash)")
		}
		seen[r.Field] = true
	}
	return reqs, nil
}

// listOptions defaults a list's options and says whether its label
// selector can match a record at all (records carry no labels).
func listOptions(opts *metainternalversion.ListOptions) (*metainternalversion.ListOptions, bool) {
	if opts == nil {
		opts = &metainternalversion.ListOptions{}
	}
	return opts, opts.LabelSelector == nil || opts.LabelSelector.Matches(labels.Set{})
}

// fillList sets the items and the continue token of a list of any of the
// record's kinds (a namespaced kind's list or its cluster-scoped twin's).
func fillList(list runtime.Object, items []runtime.Object, next string) (runtime.Object, error) {
	if err := meta.SetList(list, items); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	registry.SetContinue(list, next)
	return list, nil
}

// eachObject calls fn with obj, or with each item of obj when it is a
// list, whose list metadata it copies into lm (a Table's).
func eachObject(obj runtime.Object, lm *metav1.ListMeta, fn func(runtime.Object) error) error {
	if !meta.IsListType(obj) {
		return fn(obj)
	}
	if l, err := meta.ListAccessor(obj); err == nil {
		lm.ResourceVersion, lm.Continue, lm.RemainingItemCount = l.GetResourceVersion(), l.GetContinue(), l.GetRemainingItemCount()
	}
	return meta.EachListItem(obj, fn)
}

// resolve is the version a name of this resource names: a long name
// (<uid>.<version key>), or a short name (app-config-3f9a2c1b, or a unique
// prefix of its suffix) among the records of the request's scope that the
// caller may read. What is not a name, or names nothing the caller may
// read, is not found; a short name that names several is a bad request that
// lists them (history.ResolveVersion).
func (s recordScope) resolve(ctx context.Context, name string, deletions bool) (history.VersionID, error) {
	id, err := s.hist.ResolveVersion(ctx, s.cluster, name, s.nameScope(ctx, deletions))
	return id, s.nameError(err, name)
}

// resolveAttempt is resolve for an attempt: a long name (<unix
// microseconds>.<event key>) or a short name (history.ResolveAttempt).
func (s recordScope) resolveAttempt(ctx context.Context, name string) (history.EventID, error) {
	id, err := s.hist.ResolveAttempt(ctx, s.cluster, name, s.nameScope(ctx, false))
	return id, s.nameError(err, name)
}

// nameScope is the scope a name of the request is resolved in: the
// request's namespace; a namespaced list across all namespaces (-A, whose
// metadata.name selector names a record) any namespace.
func (s recordScope) nameScope(ctx context.Context, deletions bool) history.NameScope {
	ns := ""
	scope := history.NameScope{Namespace: &ns, Deletions: deletions}
	if s.namespaced {
		if ns = genericapirequest.NamespaceValue(ctx); ns == "" {
			scope.Namespace = nil
		}
	}
	return scope
}

// nameError is the status of a resolution's error: what is not a name is
// not found.
func (s recordScope) nameError(err error, name string) error {
	switch {
	case errors.Is(err, shortname.ErrNotAName):
		return apierrors.NewNotFound(s.resource, name)
	case err != nil:
		return registry.StatusError(s.log, err, s.resource, name)
	}
	return nil
}

// resolveSelected resolves the value of a metadata.name field selector.
// A value that is not a name, or names nothing the caller may read, is a
// bad request; so is one that names several (the ambiguity lists those the
// caller may read). Any other failure (the authorizer's, the database's)
// keeps the status resolve gave it. The value is quoted with the one
// escape: it is the caller's, but a kubectl user may have pasted it.
func (s recordScope) resolveSelected(ctx context.Context, v string, deletions bool) (history.VersionID, error) {
	id, err := s.resolve(ctx, v, deletions)
	what := "a change you may read (<uid>.<version key> or a short name)"
	if deletions {
		what = "a deletion you may read (<uid>.<version key> or a short name)"
	}
	return id, selectedError(err, v, what)
}

// resolveSelectedAttempt is resolveSelected for an attempt.
func (s recordScope) resolveSelectedAttempt(ctx context.Context, v string) (history.EventID, error) {
	id, err := s.resolveAttempt(ctx, v)
	return id, selectedError(err, v, "an attempt you may read (<unix microseconds>.<event key> or a short name)")
}

// selectedError is the status of a metadata.name selector whose value v,
// the name of what, did not resolve.
func selectedError(err error, v, what string) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return apierrors.NewBadRequest("metadata.name: " + escape.Quoted(v) + ": not the name of " + what)
	case apierrors.IsBadRequest(err):
		return apierrors.NewBadRequest("metadata.name: " + escape.Quoted(v) + ": " + apiMessage(err))
	}
	return err
}

// apiMessage is the message of an API error.
func apiMessage(err error) string {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return st.Status().Message
	}
	return err.Error()
}

package record

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/options-record/options-record/api/aggregated/registry"
	"github.com/options-record/options-record/api/history"
	recordv1alpha1 "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/api/shortname"
)

// attemptStorage serves attempts (namespaced objects) or cluster attempts
// (cluster-scoped objects): the failed and denied writes of the record,
// through the history service: each caller sees only the attempts on
// objects they may get.
type attemptStorage struct {
	recordScope
}

var (
	_ rest.Storage              = (*attemptStorage)(nil)
	_ rest.Scoper               = (*attemptStorage)(nil)
	_ rest.Getter               = (*attemptStorage)(nil)
	_ rest.Lister               = (*attemptStorage)(nil)
	_ rest.SingularNameProvider = (*attemptStorage)(nil)
	_ rest.CategoriesProvider   = (*attemptStorage)(nil)
)

func newAttemptStorage(log *slog.Logger, hist *history.Service, cluster string, namespaced bool) *attemptStorage {
	return &attemptStorage{newRecordScope(log, hist, cluster, "attempts", namespaced)}
}

func (s *attemptStorage) New() runtime.Object {
	if s.namespaced {
		return &recordv1alpha1.Attempt{}
	}
	return &recordv1alpha1.ClusterAttempt{}
}

func (s *attemptStorage) NewList() runtime.Object {
	if s.namespaced {
		return &recordv1alpha1.AttemptList{}
	}
	return &recordv1alpha1.ClusterAttemptList{}
}

// attemptName is the name of an attempt: the primary key of its event in
// the events table (the cluster is the server's), <stage time in unix
// microseconds>.<event key>.
func attemptName(at time.Time, key []byte) string { return history.AttemptName(at, key) }

func (s *attemptStorage) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	id, err := s.resolveAttempt(ctx, name)
	if err != nil {
		return nil, err
	}
	e, err := s.hist.FailedMutation(ctx, id)
	if err != nil {
		return nil, registry.StatusError(s.log, err, s.resource, name)
	}
	if !s.serves(ctx, e.Namespace) {
		return nil, apierrors.NewNotFound(s.resource, name)
	}
	return s.object(e, true), nil
}

// attemptSelection is what a list's field selector asks for.
type attemptSelection struct {
	filter history.ObjectFilter
	since  time.Time
	until  time.Time
	// event, when set, is the one attempt metadata.name names.
	event *history.EventID
}

func (s *attemptStorage) fieldSelector(ctx context.Context, sel fields.Selector, now time.Time) (attemptSelection, error) {
	var out attemptSelection
	if sel == nil || sel.Empty() {
		return out, nil
	}
	reqs, err := requirements(sel)
	if err != nil {
		return out, err
	}
	for _, r := range reqs {
		if r.Operator != selection.Equals && r.Operator != selection.DoubleEquals {
			return out, apierrors.NewBadRequest("field selector " + r.Field + string(r.Operator) + r.Value + ": only = is supported")
		}
		v := r.Value
		switch r.Field {
		case "metadata.namespace":
			// The request's namespace already selects.
		case "metadata.name":
			id, err := s.resolveSelectedAttempt(ctx, v)
			if err != nil {
				return out, err
			}
			out.event = &id
		case "object.apiGroup":
			g := v
			out.filter.Group = &g
		case "object.resource":
			out.filter.Resource = v
		case "object.name":
			out.filter.Name = v
		case "actor.username":
			out.filter.User = v
		case "since", "until":
			t, err := history.ParseTime(r.Field, v, now)
			if err != nil {
				return out, apierrors.NewBadRequest(err.Error())
			}
			if r.Field == "since" {
				out.since = t
			} else {
				out.until = t
			}
		default:
			return out, apierrors.NewBadRequest("field label " + r.Field + " not supported for " + s.resource.Resource +
				" (supported: metadata.name, metadata.namespace, " + strings.Join(recordv1alpha1.AttemptSelectableFields, ", ") + ")")
		}
	}
	return out, nil
}

// window is the time window of the list: since and until, narrowed to the
// microsecond of the attempt metadata.name names; ok is false when the
// attempt lies outside since and until (nothing can match).
func (x attemptSelection) window() (since, until time.Time, ok bool) {
	since, until = x.since, x.until
	if x.event == nil {
		return since, until, true // the history service checks since < until
	}
	if since.IsZero() || x.event.At.After(since) {
		since = x.event.At
	}
	if end := x.event.At.Add(time.Microsecond); until.IsZero() || end.Before(until) {
		until = end
	}
	return since, until, since.Before(until)
}

// List pages through the attempts the caller may read, newest first, with
// the history service's sealed cursor as the continue token.
func (s *attemptStorage) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	opts, matches := listOptions(opts)
	sel, err := s.fieldSelector(ctx, opts.FieldSelector, time.Now())
	if err != nil {
		return nil, err
	}
	list := s.NewList()
	if !matches {
		return list, nil
	}
	since, until, ok := sel.window()
	if !ok {
		return list, nil // metadata.name outside since/until
	}
	f := sel.filter
	var some bool
	if f.Namespace, some = s.listNamespace(ctx, opts.FieldSelector); !some {
		return list, nil
	}
	f.NamespacedOnly = s.namespaced
	f.Cluster = s.cluster
	page, err := s.hist.FailedMutations(ctx, f, history.PageOptions{Limit: registry.ListLimit(opts), Continue: opts.Continue, Since: since, Until: until})
	if err != nil {
		return nil, registry.StatusError(s.log, err, s.resource, "")
	}
	keep := func(e *history.Event) bool {
		if sel.event != nil && string(e.Key) != string(sel.event.Key) {
			return false // another event of the same microsecond
		}
		return s.namespaced == (e.Namespace != "") // -A: cluster-scoped objects' are clusterattempts
	}
	items := make([]runtime.Object, 0, len(page.Items))
	for i := range page.Items {
		if keep(&page.Items[i]) {
			items = append(items, s.object(&page.Items[i], false))
		}
	}
	return fillList(list, items, page.Next)
}

// object converts a failed mutation of the record; withRequest carries the
// attempted request body (a get), a list leaves it out.
func (s *attemptStorage) object(e *history.Event, withRequest bool) runtime.Object {
	a := e.Actor
	rec := recordv1alpha1.AttemptRecord{
		Object: recordv1alpha1.ObjectReference{APIGroup: e.Group, APIVersion: e.APIVersion, Resource: e.Resource,
			Namespace: e.Namespace, Name: e.Name, UID: e.UID},
		AttemptedAt: metav1.NewMicroTime(e.At),
		Verb:        e.Verb,
		Subresource: e.Subresource,
		Actor: recordv1alpha1.Actor{Username: a.Username, Groups: a.Groups, ImpersonatedUser: a.ImpersonatedUser,
			ImpersonatedGroups: a.ImpersonatedGroups, SourceIPs: a.SourceIPs, UserAgent: a.UserAgent, AuditID: a.AuditID},
		Result: recordv1alpha1.AttemptResult{Code: e.Code, Reason: e.Reason, Message: e.Message},
	}
	if withRequest && len(e.RequestObject) > 0 {
		rec.RequestObject = &runtime.RawExtension{Raw: e.RequestObject}
	}
	meta := metav1.ObjectMeta{Name: attemptName(e.At, e.Key), Namespace: attemptNamespace(e.Namespace), CreationTimestamp: metav1.NewTime(e.At)}
	if s.namespaced {
		return &recordv1alpha1.Attempt{TypeMeta: metav1.TypeMeta{Kind: "Attempt", APIVersion: recordv1alpha1.SchemeGroupVersion.String()},
			ObjectMeta: meta, AttemptRecord: rec}
	}
	meta.Namespace = ""
	return &recordv1alpha1.ClusterAttempt{TypeMeta: metav1.TypeMeta{Kind: "ClusterAttempt", APIVersion: recordv1alpha1.SchemeGroupVersion.String()},
		ObjectMeta: meta, AttemptRecord: rec}
}

// attemptNamespace is the metadata namespace of a refused request's
// attempt. kubectl shows it as is in its NAMESPACE column (-A), and a
// refused request names whatever namespace its sender wrote: one that is
// not a namespace name is shown quoted (the record body keeps it as sent).
func attemptNamespace(ns string) string {
	if ns == "" || len(validation.IsDNS1123Label(ns)) == 0 {
		return ns
	}
	return registry.Cell(ns)
}

// messageCells is how many characters of the apiserver's message the
// Message column shows; -o yaml has all of it.
const messageCells = 120

// shortMessage is the first messageCells characters of m, escaped as every
// recorded string is (registry.Cell): the message quotes what the caller sent.
func shortMessage(m string) string {
	if r := []rune(m); len(r) > messageCells {
		m = string(r[:messageCells-1]) + "…"
	}
	return registry.Cell(m)
}

// attemptColumns lead with what a person reads first (the object, who,
// when, the answer, in one cell); the short name ends the row, the long one is in -o
// wide.
var attemptColumns = []metav1.TableColumnDefinition{
	{Name: "Resource", Type: "string", Description: "Resource (and subresource) the write aimed at"},
	{Name: "Object", Type: "string", Description: "Name of the object"},
	{Name: "User", Type: "string", Description: "Who tried (the authenticated caller)"},
	{Name: "As", Type: "string", Description: "The identity the caller impersonated, if any"},
	{Name: "Verb", Type: "string", Description: "create, update, patch, delete or deletecollection"},
	{Name: "Result", Type: "string", Description: "HTTP status code and reason of the apiserver's answer (403 Forbidden, 409 Conflict, 422 Invalid...)"},
	{Name: "Attempted", Type: "string", Description: "How long ago"},
	{Name: "Name", Type: "string", Format: "name", Description: "Short name of the attempt (the object's name and the first digits of its event key): kubectl get attempt NAME takes it"},
	{Name: "Message", Type: "string", Description: "The apiserver's message (shortened: -o yaml has all of it)", Priority: 1},
	{Name: "Audit-ID", Type: "string", Description: "Audit ID of the request", Priority: 1},
	{Name: "Long-Name", Type: "string", Description: "<unix microseconds>.<event key> of the attempt: metadata.name", Priority: 1},
}

func (*attemptStorage) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{ColumnDefinitions: attemptColumns}
	add := func(o runtime.Object, r *recordv1alpha1.AttemptRecord, name string) {
		res := r.Object.Resource
		if r.Object.APIGroup != "" {
			res += "." + r.Object.APIGroup
		}
		if r.Subresource != "" {
			res += "/" + r.Subresource
		}
		table.Rows = append(table.Rows, metav1.TableRow{
			Cells: []any{registry.Cell(res), registry.Cell(r.Object.Name), registry.Cell(r.Actor.Username), registry.Cell(r.Actor.ImpersonatedUser), registry.Cell(r.Verb),
				strings.TrimSpace(strconv.Itoa(int(r.Result.Code)) + " " + registry.Cell(r.Result.Reason)), duration.HumanDuration(time.Since(r.AttemptedAt.Time)),
				shortname.OfLong(r.Object.Name, name), shortMessage(r.Result.Message), registry.Cell(r.Actor.AuditID), registry.Cell(name)},
			Object: runtime.RawExtension{Object: o},
		})
	}
	err := eachObject(obj, &table.ListMeta, func(o runtime.Object) error {
		switch o := o.(type) {
		case *recordv1alpha1.Attempt:
			add(o, &o.AttemptRecord, o.Name)
		case *recordv1alpha1.ClusterAttempt:
			add(o, &o.AttemptRecord, o.Name)
		default:
			return registry.ErrUnexpectedType(o)
		}
		return nil
	})
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return table, nil
}

package history

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/store"
)

// authorize asks whether the caller may verb the resource (group,
// resource) in namespace, name (optional) included.
func (s *Service) authorize(ctx context.Context, verb, group, resource, namespace, name string) error {
	u := Caller(ctx)
	if u == nil {
		return fmt.Errorf("%w: no caller", errs.ErrUnauthenticated)
	}
	if name != "" {
		namespace = authzNamespace(group, resource, namespace, name)
	}
	dec, reason, err := s.authz.Authorize(ctx, authorizer.AttributesRecord{
		User: u, Verb: verb, APIGroup: group, Resource: resource, Namespace: namespace, Name: name,
		ResourceRequest: true,
	})
	if err != nil && dec != authorizer.DecisionAllow {
		return fmt.Errorf("authorize %s %s: %w", verb, resource, err)
	}
	if dec == authorizer.DecisionAllow {
		return nil
	}
	what := resource
	if group != "" {
		what += "." + group
	}
	where := "at the cluster scope"
	if namespace != "" {
		where = fmt.Sprintf("in the namespace %q", namespace)
	}
	detail := fmt.Sprintf("user %q cannot %s %s %s", u.GetName(), verb, what, where)
	if reason != "" {
		detail += " (" + reason + ")"
	}
	return fmt.Errorf("%w: %s", errs.ErrForbidden, detail)
}

// ReadFilter remembers, for one request, which (group, resource, namespace)
// the caller may get, so a list asks each question once. It asks at most
// MaxChecks distinct questions: past that, check answers errTooManyChecks.
type ReadFilter struct {
	s     *Service
	ctx   context.Context
	cache map[string]error
}

// MaxChecks bounds the distinct authorization questions (SubjectAccessReviews
// when not cached) of one request.
const MaxChecks = 200

// errTooManyChecks ends a scan that would ask more than MaxChecks questions.
var errTooManyChecks = fmt.Errorf("%w: the request spans more than %d (resource, namespace) pairs: narrow it (namespace, resource, since/until)", errs.ErrInvalid, MaxChecks)

func (s *Service) ReadFilter(ctx context.Context) *ReadFilter {
	return &ReadFilter{s: s, ctx: ctx, cache: map[string]error{}}
}

// check asks once per request whether the caller may get the resource in
// namespace: nil, an errs.ErrForbidden, or the authorizer's failure.
func (f *ReadFilter) Check(group, resource, namespace string) error {
	return f.CheckVerb("get", group, resource, namespace)
}

func (f *ReadFilter) CheckVerb(verb, group, resource, namespace string) error {
	k := verb + "\x00" + group + "\x00" + resource + "\x00" + namespace
	err, ok := f.cache[k]
	if !ok {
		if len(f.cache) >= MaxChecks {
			return errTooManyChecks
		}
		err = f.s.authorize(f.ctx, verb, group, resource, namespace, "")
		f.cache[k] = err
	}
	return err
}

// allowed reports whether the caller may get the resource in namespace;
// errors other than a denial are returned.
func (f *ReadFilter) Allowed(group, resource, namespace string) (bool, error) {
	err := f.Check(group, resource, namespace)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, errs.ErrForbidden) {
		return false, nil
	}
	return false, err
}

// AllowedNamed reports whether the caller may get the named object: by its
// resource in namespace, or else by its name (a Role's resourceNames). Only
// lists of one object ask it, so the names checked stay few.
func (f *ReadFilter) AllowedNamed(group, resource, namespace, name string) (bool, error) {
	ok, err := f.Allowed(group, resource, namespace)
	if ok || err != nil || name == "" {
		return ok, err
	}
	k := "get\x00" + group + "\x00" + resource + "\x00" + namespace + "\x00" + name
	err, seen := f.cache[k]
	if !seen {
		if len(f.cache) >= MaxChecks {
			return false, errTooManyChecks
		}
		err = f.s.authorize(f.ctx, "get", group, resource, namespace, name)
		f.cache[k] = err
	}
	if errors.Is(err, errs.ErrForbidden) {
		return false, nil
	}
	return err == nil, err
}

// allowedVerbs reports whether the caller may do every verb on the
// resource in namespace; errors other than a denial are returned.
func (f *ReadFilter) AllowedVerbs(group, resource, namespace string, verbs ...string) (bool, error) {
	for _, verb := range verbs {
		err := f.CheckVerb(verb, group, resource, namespace)
		if errors.Is(err, errs.ErrForbidden) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
	return true, nil
}

// redactInitiator leaves out who started v's cascade (a namespace or owner
// deletion) unless the caller may read the object whose deletion started
// it: a user who may read a dependent is not told who deleted an owner
// they may not see (a ConfigMap can name any uid as its owner).
func (f *ReadFilter) redactInitiator(v *store.VersionRecord) error {
	if v.InitiatedBy == "" && v.Initiator == nil {
		return nil
	}
	ok := false
	if i := v.Initiator; i != nil {
		var err error
		ok, err = f.Allowed(i.Group, i.Resource, authzNamespace(i.Group, i.Resource, i.Namespace, i.Name))
		if err != nil && !errors.Is(err, errTooManyChecks) {
			return err
		}
	}
	if !ok {
		v.InitiatedBy, v.InitiatedVia, v.Initiator = "", "", nil
	}
	return nil
}

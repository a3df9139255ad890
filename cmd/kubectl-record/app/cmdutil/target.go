package cmdutil

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Target is the object (or the kind of objects) a verb is about, resolved
// as kubectl resolves it: short names, singular and plural, kind,
// group-qualified names (deploy, deployment.apps, cm).
type Target struct {
	Resource   schema.GroupResource
	Namespaced bool
	Name       string // "" for every object of the resource
}

// ParseTarget reads TYPE, TYPE/NAME or TYPE NAME.
func ParseTarget(args []string) (typ, name string, err error) {
	switch len(args) {
	case 0:
		return "", "", nil
	case 1:
		typ, name, _ = strings.Cut(args[0], "/")
		if strings.Contains(name, "/") {
			return "", "", usageError{fmt.Errorf("%q: want TYPE/NAME", args[0])}
		}
	case 2:
		if strings.Contains(args[0], "/") {
			return "", "", usageError{fmt.Errorf("%q %q: want TYPE/NAME or TYPE NAME", args[0], args[1])}
		}
		typ, name = args[0], args[1]
	default:
		return "", "", usageError{fmt.Errorf("want TYPE/NAME or TYPE NAME, got %d arguments", len(args))}
	}
	if typ == "" {
		return "", "", usageError{fmt.Errorf("%q: no type", args[0])}
	}
	return typ, name, nil
}

// Resolve maps a TYPE as typed to its resource with the cluster's
// discovery (and kubectl's short names).
func (f *Factory) Resolve(typ string) (schema.GroupResource, bool, error) {
	mapper, err := f.Config.ToRESTMapper()
	if err != nil {
		return schema.GroupResource{}, false, err
	}
	gvr, gr := schema.ParseResourceArg(strings.ToLower(typ))
	var full schema.GroupVersionResource
	if gvr != nil {
		full, err = mapper.ResourceFor(*gvr)
	}
	if gvr == nil || err != nil {
		full, err = mapper.ResourceFor(gr.WithVersion(""))
	}
	if err != nil {
		if meta.IsNoMatchError(err) {
			return schema.GroupResource{}, false, &codedError{ExitNotFound, fmt.Errorf("the server doesn't have a resource type %q", typ)}
		}
		return schema.GroupResource{}, false, err
	}
	gvk, err := mapper.KindFor(full)
	if err != nil {
		return schema.GroupResource{}, false, err
	}
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupResource{}, false, err
	}
	return full.GroupResource(), m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// Target resolves the arguments of a verb; needName says a name is required.
func (f *Factory) Target(args []string, needName bool) (*Target, error) {
	typ, name, err := ParseTarget(args)
	if err != nil {
		return nil, err
	}
	if typ == "" {
		if needName {
			return nil, usageError{fmt.Errorf("want TYPE/NAME (for example cm/app-config or deploy web)")}
		}
		return nil, nil
	}
	if needName && name == "" {
		return nil, usageError{fmt.Errorf("%s: want TYPE/NAME (for example %s/NAME)", typ, typ)}
	}
	gr, namespaced, err := f.Resolve(typ)
	if err != nil {
		return nil, err
	}
	return &Target{Resource: gr, Namespaced: namespaced, Name: name}, nil
}

// Field is one requirement of a field selector, its value escaped: a
// name holding "," or "=" (a Role may be named "a,object.name=deployer")
// stays one value and cannot add a requirement.
func Field(name, value string) string { return name + "=" + fields.EscapeValue(value) }

// Selector is the field selector of the record's lists for the target (a
// nil one: every object); extra are requirements made with Field.
func (t *Target) Selector(extra ...string) string {
	var s []string
	if t != nil {
		s = append(s, Field("object.apiGroup", t.Resource.Group), Field("object.resource", t.Resource.Resource))
		if t.Name != "" {
			s = append(s, Field("object.name", t.Name))
		}
	}
	for _, e := range extra {
		if e != "" {
			s = append(s, e)
		}
	}
	return strings.Join(s, ",")
}

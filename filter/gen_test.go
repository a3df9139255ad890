package filter

// Fixture builders: event(...) and orc(...) start from a typical object and
// apply modifiers, in the style of cert-manager's test/unit/gen.

import (
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/api/v1alpha1"
)

type eventMod func(*auditv1.Event)

// event returns an audit event for a successful update of the ConfigMap
// prod/app by alice at level RequestResponse, changed by mods. Its
// requestURI is derived from the objectRef unless a modifier sets it.
func event(mods ...eventMod) *auditv1.Event {
	ev := &auditv1.Event{
		TypeMeta: metav1.TypeMeta{APIVersion: "audit.k8s.io/v1", Kind: "Event"},
		Level:    auditv1.LevelRequestResponse,
		AuditID:  "5e0c6bd4-9f0c-4b8e-a3a5-2d1c7f1c9a10",
		Stage:    auditv1.StageResponseComplete,
		Verb:     "update",
		User: authnv1.UserInfo{
			Username: "alice",
			Groups:   []string{"developers", "system:authenticated"},
		},
		ObjectRef: &auditv1.ObjectReference{
			Resource:   "configmaps",
			Namespace:  "prod",
			Name:       "app",
			APIVersion: "v1",
		},
		ResponseStatus: &metav1.Status{Code: 200},
	}
	for _, mod := range mods {
		mod(ev)
	}
	if ev.RequestURI == "" || ev.RequestURI[0] == '?' { // unset, or only a query()
		ev.RequestURI = requestURI(ev.ObjectRef) + ev.RequestURI
	}
	return ev
}

func requestURI(ref *auditv1.ObjectReference) string {
	if ref == nil {
		return "/healthz"
	}
	var b strings.Builder
	if ref.APIGroup == "" {
		b.WriteString("/api/v1")
	} else {
		b.WriteString("/apis/" + ref.APIGroup + "/v1")
	}
	if ref.Namespace != "" && ref.Resource != "namespaces" {
		b.WriteString("/namespaces/" + ref.Namespace)
	}
	b.WriteString("/" + ref.Resource)
	if ref.Name != "" {
		b.WriteString("/" + ref.Name)
	}
	if ref.Subresource != "" {
		b.WriteString("/" + ref.Subresource)
	}
	return b.String()
}

func verb(v string) eventMod { return func(ev *auditv1.Event) { ev.Verb = v } }

func stage(s auditv1.Stage) eventMod { return func(ev *auditv1.Event) { ev.Stage = s } }

func level(l auditv1.Level) eventMod { return func(ev *auditv1.Event) { ev.Level = l } }

func user(name string, groups ...string) eventMod {
	return func(ev *auditv1.Event) { ev.User = authnv1.UserInfo{Username: name, Groups: groups} }
}

func impersonating(name string, groups ...string) eventMod {
	return func(ev *auditv1.Event) { ev.ImpersonatedUser = &authnv1.UserInfo{Username: name, Groups: groups} }
}

func ns(namespace string) eventMod {
	return func(ev *auditv1.Event) { ev.ObjectRef.Namespace = namespace }
}

func name(n string) eventMod { return func(ev *auditv1.Event) { ev.ObjectRef.Name = n } }

// clusterScoped clears the namespace.
func clusterScoped() eventMod { return ns("") }

func resource(group, res string) eventMod {
	return func(ev *auditv1.Event) {
		ev.ObjectRef.APIGroup, ev.ObjectRef.Resource = group, res
		ev.ObjectRef.APIVersion = "v1"
	}
}

func sub(s string) eventMod { return func(ev *auditv1.Event) { ev.ObjectRef.Subresource = s } }

func noObjectRef() eventMod { return func(ev *auditv1.Event) { ev.ObjectRef = nil } }

func uri(u string) eventMod { return func(ev *auditv1.Event) { ev.RequestURI = u } }

// query sets a query string; event() puts the path derived from the
// objectRef before it.
func query(q string) eventMod { return func(ev *auditv1.Event) { ev.RequestURI = "?" + q } }

// body sets the request body as the audit log carries it.
func body(js string) eventMod {
	return func(ev *auditv1.Event) {
		ev.RequestObject = &runtime.Unknown{Raw: []byte(js), ContentType: runtime.ContentTypeJSON}
	}
}

func code(c int32) eventMod {
	return func(ev *auditv1.Event) { ev.ResponseStatus = &metav1.Status{Code: c} }
}

type orcMod func(*v1alpha1.OptionsRecordController)

// orc returns an OptionsRecordController with an empty (select-everything)
// spec, changed by mods.
func orc(namespace, name string, mods ...orcMod) v1alpha1.OptionsRecordController {
	o := v1alpha1.OptionsRecordController{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Generation: 1},
	}
	for _, mod := range mods {
		mod(&o)
	}
	return o
}

// sinkORC is an orc in the default sink namespace.
func sinkORC(name string, mods ...orcMod) v1alpha1.OptionsRecordController {
	return orc(DefaultSinkNamespace, name, mods...)
}

func namespaces(globs ...string) orcMod {
	return func(o *v1alpha1.OptionsRecordController) { o.Spec.Namespaces = globs }
}

func excludeNamespaces(globs ...string) orcMod {
	return func(o *v1alpha1.OptionsRecordController) { o.Spec.ExcludeNamespaces = globs }
}

func resources(group string, res ...string) orcMod {
	return func(o *v1alpha1.OptionsRecordController) {
		o.Spec.Resources = append(o.Spec.Resources, v1alpha1.ResourceSelector{Group: group, Resources: res})
	}
}

func verbs(vs ...v1alpha1.Verb) orcMod {
	return func(o *v1alpha1.OptionsRecordController) { o.Spec.Verbs = vs }
}

func users(globs ...string) orcMod {
	return func(o *v1alpha1.OptionsRecordController) { o.Spec.Users = globs }
}

func excludeUsers(globs ...string) orcMod {
	return func(o *v1alpha1.OptionsRecordController) { o.Spec.ExcludeUsers = globs }
}

func userGroups(globs ...string) orcMod {
	return func(o *v1alpha1.OptionsRecordController) { o.Spec.UserGroups = globs }
}

func excludeUserGroups(globs ...string) orcMod {
	return func(o *v1alpha1.OptionsRecordController) { o.Spec.ExcludeUserGroups = globs }
}

// keepStatusChanges sets ignoreStatusOnlyChanges: false.
func keepStatusChanges() orcMod {
	return func(o *v1alpha1.OptionsRecordController) {
		f := false
		o.Spec.IgnoreStatusOnlyChanges = &f
	}
}

func recordSecretData() orcMod {
	return func(o *v1alpha1.OptionsRecordController) { o.Spec.RecordSecretData = true }
}

func retention(d time.Duration) orcMod {
	return func(o *v1alpha1.OptionsRecordController) { o.Spec.Retention = &metav1.Duration{Duration: d} }
}

func generation(g int64) orcMod {
	return func(o *v1alpha1.OptionsRecordController) { o.Generation = g }
}

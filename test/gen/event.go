package gen

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// EventMod changes an event under construction.
type EventMod func(*auditv1.Event)

var seq atomic.Int64

// Base is the time events are stamped from by default.
var Base = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// Event builds a successful ResponseComplete "create configmaps default/cm"
// by alice, then applies mods in order.
func Event(mods ...EventMod) *auditv1.Event {
	n := seq.Add(1)
	at := Base.Add(time.Duration(n) * time.Millisecond)
	ev := &auditv1.Event{
		Level:                    auditv1.LevelRequestResponse,
		AuditID:                  types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", n)),
		Stage:                    auditv1.StageResponseComplete,
		Verb:                     "create",
		User:                     authnv1.UserInfo{Username: "alice", Groups: []string{"system:authenticated"}},
		SourceIPs:                []string{"10.0.0.7"},
		UserAgent:                "kubectl/v1.36.3 (linux/amd64) kubernetes/abcdef",
		ObjectRef:                &auditv1.ObjectReference{Resource: "configmaps", Namespace: "default", Name: "cm", APIVersion: "v1"},
		ResponseStatus:           &metav1.Status{Code: 201},
		RequestReceivedTimestamp: metav1.NewMicroTime(at.Add(-2 * time.Millisecond)),
		StageTimestamp:           metav1.NewMicroTime(at),
	}
	for _, m := range mods {
		m(ev)
	}
	if ev.RequestURI == "" {
		ev.RequestURI = uri(ev)
	}
	return ev
}

func uri(ev *auditv1.Event) string {
	r := ev.ObjectRef
	if r == nil {
		return "/api"
	}
	var b strings.Builder
	if r.APIGroup == "" {
		b.WriteString("/api/" + orDefault(r.APIVersion, "v1"))
	} else {
		b.WriteString("/apis/" + r.APIGroup + "/" + orDefault(r.APIVersion, "v1"))
	}
	if r.Namespace != "" && r.Resource != "namespaces" {
		b.WriteString("/namespaces/" + r.Namespace)
	}
	b.WriteString("/" + r.Resource)
	if r.Name != "" && ev.Verb != "create" {
		b.WriteString("/" + r.Name)
	}
	if r.Subresource != "" {
		b.WriteString("/" + r.Subresource)
	}
	return b.String()
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// Verb sets the verb and the usual success code for it.
func Verb(v string) EventMod {
	return func(e *auditv1.Event) {
		e.Verb = v
		if e.ResponseStatus != nil && e.ResponseStatus.Code < 300 {
			e.ResponseStatus.Code = 200
			if v == "create" {
				e.ResponseStatus.Code = 201
			}
		}
	}
}

// User sets the authenticated caller.
func User(name string, groups ...string) EventMod {
	return func(e *auditv1.Event) {
		e.User = authnv1.UserInfo{Username: name, Groups: append(groups, "system:authenticated")}
	}
}

// Impersonating sets the identity the caller acted as.
func Impersonating(name string, groups ...string) EventMod {
	return func(e *auditv1.Event) { e.ImpersonatedUser = &authnv1.UserInfo{Username: name, Groups: groups} }
}

// Resource sets the object's group, version and resource.
func Resource(group, version, resource string) EventMod {
	return func(e *auditv1.Event) {
		e.ObjectRef.APIGroup, e.ObjectRef.APIVersion, e.ObjectRef.Resource = group, version, resource
	}
}

// Subresource sets the subresource.
func Subresource(s string) EventMod { return func(e *auditv1.Event) { e.ObjectRef.Subresource = s } }

// Namespace sets the object's namespace.
func Namespace(ns string) EventMod { return func(e *auditv1.Event) { e.ObjectRef.Namespace = ns } }

// Name sets the object's name.
func Name(n string) EventMod { return func(e *auditv1.Event) { e.ObjectRef.Name = n } }

// Code sets the response code.
func Code(c int32) EventMod {
	return func(e *auditv1.Event) { e.ResponseStatus = &metav1.Status{Code: c} }
}

// Failed sets a failure status (code, reason, message) and a Status response.
func Failed(code int32, reason metav1.StatusReason, msg string) EventMod {
	return func(e *auditv1.Event) {
		e.ResponseStatus = &metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg}
		e.ResponseObject = Raw(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason, "message": msg})
	}
}

// At sets the stage timestamp (and the received one just before).
func At(t time.Time) EventMod {
	return func(e *auditv1.Event) {
		e.StageTimestamp = metav1.NewMicroTime(t)
		e.RequestReceivedTimestamp = metav1.NewMicroTime(t.Add(-2 * time.Millisecond))
	}
}

// AuditID sets the audit ID (clients can choose it with the Audit-ID header).
func AuditID(id string) EventMod { return func(e *auditv1.Event) { e.AuditID = types.UID(id) } }

// URI sets the request URI.
func URI(u string) EventMod { return func(e *auditv1.Event) { e.RequestURI = u } }

// Stage sets the stage.
func Stage(s auditv1.Stage) EventMod { return func(e *auditv1.Event) { e.Stage = s } }

// UserAgent sets the user agent.
func UserAgent(ua string) EventMod { return func(e *auditv1.Event) { e.UserAgent = ua } }

// Request sets the request object (any JSON-marshalable value).
func Request(obj any) EventMod { return func(e *auditv1.Event) { e.RequestObject = Raw(obj) } }

// Response sets the response object.
func Response(obj any) EventMod { return func(e *auditv1.Event) { e.ResponseObject = Raw(obj) } }

// Raw marshals obj as a runtime.Unknown the way audit events carry objects.
func Raw(obj any) *runtime.Unknown {
	if obj == nil {
		return nil
	}
	b, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	return &runtime.Unknown{Raw: b, ContentType: runtime.ContentTypeJSON}
}

// EventList marshals events as the body the apiserver POSTs.
func EventList(evs ...*auditv1.Event) []byte {
	l := auditv1.EventList{TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: "audit.k8s.io/v1"}}
	for _, e := range evs {
		l.Items = append(l.Items, *e)
	}
	b, err := json.Marshal(l)
	if err != nil {
		panic(err)
	}
	return b
}

// Lines marshals events as the log backend writes them: one JSON per line.
func Lines(evs ...*auditv1.Event) []byte {
	var b strings.Builder
	for _, e := range evs {
		e.TypeMeta = metav1.TypeMeta{Kind: "Event", APIVersion: "audit.k8s.io/v1"}
		j, err := json.Marshal(e)
		if err != nil {
			panic(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

package pubsub

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// LogEntry is the part of a Cloud Logging LogEntry
// (https://cloud.google.com/logging/docs/reference/v2/rest/v2/LogEntry)
// that a GKE Kubernetes audit log entry fills and the conversion reads.
type LogEntry struct {
	InsertID         string            `json:"insertId"`
	LogName          string            `json:"logName,omitempty"`
	Timestamp        time.Time         `json:"timestamp"`
	ReceiveTimestamp *time.Time        `json:"receiveTimestamp,omitempty"`
	Severity         string            `json:"severity,omitempty"`
	Labels           map[string]string `json:"labels,omitempty"`
	Resource         *MonitoredRes     `json:"resource,omitempty"`
	Operation        *Operation        `json:"operation,omitempty"`
	ProtoPayload     *AuditLog         `json:"protoPayload,omitempty"`
}

// MonitoredRes is LogEntry.resource: for GKE's audit logs the type is
// k8s_cluster, with labels project_id, location and cluster_name.
type MonitoredRes struct {
	Type   string            `json:"type"`
	Labels map[string]string `json:"labels,omitempty"`
}

// Operation is LogEntry.operation (producer k8s.io, first and last true).
type Operation struct {
	ID       string `json:"id,omitempty"`
	Producer string `json:"producer,omitempty"`
	First    bool   `json:"first,omitempty"`
	Last     bool   `json:"last,omitempty"`
}

// AuditLog is google.cloud.audit.AuditLog
// (https://cloud.google.com/logging/docs/reference/audit/auditlog/rest/Shared.Types/AuditLog)
// as GKE fills it for the Kubernetes API (serviceName k8s.io).
type AuditLog struct {
	Type               string              `json:"@type"`
	ServiceName        string              `json:"serviceName"`
	MethodName         string              `json:"methodName"`
	ResourceName       string              `json:"resourceName"`
	AuthenticationInfo *AuthenticationInfo `json:"authenticationInfo,omitempty"`
	AuthorizationInfo  []AuthorizationInfo `json:"authorizationInfo,omitempty"`
	RequestMetadata    *RequestMetadata    `json:"requestMetadata,omitempty"`
	Status             *RPCStatus          `json:"status,omitempty"`
	// Request and Response are Structs holding the Kubernetes objects,
	// with an "@type" member added (e.g. "core.k8s.io/v1.ConfigMap").
	Request  json.RawMessage `json:"request,omitempty"`
	Response json.RawMessage `json:"response,omitempty"`
	// Metadata is service-specific data; read for audit annotations when
	// the entry's labels do not carry them.
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// AuthenticationInfo is AuditLog.authenticationInfo.
type AuthenticationInfo struct {
	// PrincipalEmail is, per the AuditLog reference, "the authenticated
	// user making the request": the audit Event's user.
	PrincipalEmail string `json:"principalEmail,omitempty"`
	// AuthoritySelector is "the authority selector specified by the
	// requestor": for the Kubernetes API, the user a request impersonates
	// (kubectl --as), the audit Event's impersonatedUser. Elastic's
	// detection rule for GKE impersonation reads it so (see doc.go).
	AuthoritySelector string `json:"authoritySelector,omitempty"`
	// ServiceAccountDelegationInfo is, per the AuditLog reference, the
	// real authorities behind principalEmail when it is a Google service
	// account whose credential another principal obtained (IAM
	// delegation, not Kubernetes impersonation).
	ServiceAccountDelegationInfo []DelegationInfo `json:"serviceAccountDelegationInfo,omitempty"`
}

// DelegationInfo is one entry of serviceAccountDelegationInfo: a first
// party (Google) principal, or a third party (federated) one, whose
// claims are not read.
type DelegationInfo struct {
	PrincipalSubject    string `json:"principalSubject,omitempty"`
	FirstPartyPrincipal *struct {
		PrincipalEmail string `json:"principalEmail,omitempty"`
	} `json:"firstPartyPrincipal,omitempty"`
	ThirdPartyPrincipal *struct{} `json:"thirdPartyPrincipal,omitempty"`
}

// AuthorizationInfo is one element of AuditLog.authorizationInfo.
type AuthorizationInfo struct {
	Resource   string `json:"resource,omitempty"`
	Permission string `json:"permission,omitempty"`
	Granted    bool   `json:"granted"`
}

// RequestMetadata is AuditLog.requestMetadata.
type RequestMetadata struct {
	CallerIP                string `json:"callerIp,omitempty"`
	CallerSuppliedUserAgent string `json:"callerSuppliedUserAgent,omitempty"`
}

// RPCStatus is google.rpc.Status: code 0 is OK.
type RPCStatus struct {
	Code    int    `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// DelegationAnnotation is the annotation of a converted event that keeps
// authenticationInfo.serviceAccountDelegationInfo: the principals behind a
// Google service account's credential, originator first, comma-separated.
const DelegationAnnotation = "gke.optionsrecord.io/delegation"

// Errors of Convert: an entry that is not a Kubernetes audit entry, or
// one that does not say what was done to what.
var (
	ErrNotKubernetes = errors.New("not a GKE Kubernetes audit log entry")
	ErrMalformed     = errors.New("malformed GKE audit log entry")
)

// Convert turns the JSON of one GKE Kubernetes audit LogEntry into the
// audit.k8s.io/v1 Event the apiserver wrote. What is exact and what is not
// is in doc.go.
func Convert(data []byte) (auditv1.Event, error) {
	var e LogEntry
	if err := json.Unmarshal(data, &e); err != nil {
		return auditv1.Event{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return e.Event()
}

// Event converts the entry (see Convert).
func (e *LogEntry) Event() (auditv1.Event, error) {
	p := e.ProtoPayload
	if p == nil || p.ServiceName != "k8s.io" || !strings.HasPrefix(p.MethodName, "io.k8s.") {
		return auditv1.Event{}, ErrNotKubernetes
	}
	if e.InsertID == "" || e.Timestamp.IsZero() {
		return auditv1.Event{}, fmt.Errorf("%w: no insertId or timestamp", ErrMalformed)
	}
	verb := p.MethodName[strings.LastIndexByte(p.MethodName, '.')+1:]
	if verb == "" {
		// "io.k8s." or a name ending in a dot: no verb to record.
		return auditv1.Event{}, fmt.Errorf("%w: methodName %q names no verb", ErrMalformed, p.MethodName)
	}
	ref, uri, err := objectRef(p.MethodName, p.ResourceName)
	if err != nil {
		return auditv1.Event{}, err
	}
	if verb == "create" && ref.Subresource == "" && ref.Name != "" {
		// A create is posted to its collection: the name is the body's.
		uri = strings.TrimSuffix(uri, "/"+ref.Name)
	}
	ts := metav1.NewMicroTime(e.Timestamp)
	ev := auditv1.Event{
		TypeMeta:   metav1.TypeMeta{APIVersion: "audit.k8s.io/v1", Kind: "Event"},
		Level:      auditv1.LevelMetadata,
		AuditID:    types.UID(auditID(e)),
		Stage:      auditv1.StageResponseComplete,
		RequestURI: uri,
		Verb:       verb,
		ObjectRef:  ref,
		// GKE gives one time: the request's.
		RequestReceivedTimestamp: ts,
		StageTimestamp:           ts,
	}
	if a := p.AuthenticationInfo; a != nil {
		// principalEmail is who the apiserver authenticated; the selector
		// whom it asked to act as (kubectl --as). An IAM delegation behind
		// principalEmail is no impersonation the apiserver saw: it is kept
		// as the DelegationAnnotation, not as the event's users.
		ev.User = authnv1.UserInfo{Username: a.PrincipalEmail}
		if a.AuthoritySelector != "" {
			ev.ImpersonatedUser = &authnv1.UserInfo{Username: a.AuthoritySelector}
		}
	}
	if m := p.RequestMetadata; m != nil {
		if m.CallerIP != "" {
			ev.SourceIPs = []string{m.CallerIP}
		}
		ev.UserAgent = m.CallerSuppliedUserAgent
	}
	if ev.RequestObject, err = object(p.Request); err != nil {
		return auditv1.Event{}, fmt.Errorf("%w: request: %w", ErrMalformed, err)
	}
	if ev.ResponseObject, err = object(p.Response); err != nil {
		return auditv1.Event{}, fmt.Errorf("%w: response: %w", ErrMalformed, err)
	}
	if ev.RequestObject != nil || ev.ResponseObject != nil {
		ev.Level = auditv1.LevelRequestResponse
		if ev.ResponseObject == nil {
			ev.Level = auditv1.LevelRequest
		}
	}
	ev.ResponseStatus = responseStatus(p, ev.ResponseObject, verb)
	ev.Annotations = annotations(e, delegation(p.AuthenticationInfo))
	return ev, nil
}

// auditID is the event's auditID: the entry's insertId, which Cloud
// Logging keeps for an entry and Pub/Sub redelivers unchanged, so a
// redelivered entry has the same event key. GKE documents operation.id as
// the insertId's value; a distinct operation.id is preferred as it is the
// request's.
func auditID(e *LogEntry) string {
	if e.Operation != nil && e.Operation.ID != "" {
		return e.Operation.ID
	}
	return e.InsertID
}

// Bounds of the DelegationAnnotation: the principals kept, and the bytes
// of each (an email address has at most 254).
const (
	maxDelegationPrincipals = 8
	maxPrincipalBytes       = 256
)

// delegation is the DelegationAnnotation's value: the chain of
// serviceAccountDelegationInfo, which the AuditLog reference keeps in the
// order of the delegations, originator first. Each principal is named by
// its email (first party) or its principalSubject (a federated, third
// party one, whose claims are not kept), else "<third-party>" or
// "<unknown>"; made printable, without the separator, and cut at
// maxPrincipalBytes; a chain longer than maxDelegationPrincipals ends
// in "…".
func delegation(a *AuthenticationInfo) string {
	if a == nil || len(a.ServiceAccountDelegationInfo) == 0 {
		return ""
	}
	chain := a.ServiceAccountDelegationInfo
	names := make([]string, 0, min(len(chain), maxDelegationPrincipals)+1)
	for i, d := range chain {
		if i == maxDelegationPrincipals {
			names = append(names, "…")
			break
		}
		name := d.PrincipalSubject
		switch {
		case d.FirstPartyPrincipal != nil && d.FirstPartyPrincipal.PrincipalEmail != "":
			name = d.FirstPartyPrincipal.PrincipalEmail
		case name != "":
		case d.ThirdPartyPrincipal != nil:
			name = "<third-party>"
		default:
			name = "<unknown>"
		}
		names = append(names, principalText(name))
	}
	return strings.Join(names, ",")
}

// principalText is a principal's name as one element of the chain: valid
// UTF-8, a comma or a rune that does not print as U+FFFD, at most
// maxPrincipalBytes (cut on a rune, ending in "…").
func principalText(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == ',' || !unicode.IsPrint(r) {
			return utf8.RuneError
		}
		return r
	}, strings.ToValidUTF8(s, string(utf8.RuneError)))
	if len(s) <= maxPrincipalBytes {
		return s
	}
	cut := maxPrincipalBytes - len("…")
	for !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// objectRef parses resourceName: "<group>/<version>/namespaces/<ns>/
// <resource>[/<name>[/<subresource>]]" or "<group>/<version>/<resource>
// [/<name>[/<subresource>]]", the group "core" for the core group. A
// namespace's own name looks like a namespaced collection
// ("core/v1/namespaces/foo/status"): the methodName, which names the
// resource ("io.k8s.core.v1.namespaces.status.update"), tells them apart.
// It returns the reference and the request URI it was made from.
func objectRef(method, name string) (*auditv1.ObjectReference, string, error) {
	parts := strings.Split(name, "/")
	if len(parts) < 3 || parts[0] == "" || parts[1] == "" {
		return nil, "", fmt.Errorf("%w: resourceName %q", ErrMalformed, name)
	}
	for _, p := range parts {
		if p == "" {
			return nil, "", fmt.Errorf("%w: resourceName %q", ErrMalformed, name)
		}
	}
	ref := &auditv1.ObjectReference{APIGroup: parts[0], APIVersion: parts[1]}
	prefix := "/apis/" + parts[0] + "/" + parts[1]
	if parts[0] == "core" {
		ref.APIGroup = ""
		prefix = "/api/" + parts[1]
	}
	rest := parts[2:]
	if rest[0] == "namespaces" && len(rest) >= 3 && methodResource(method, parts[1]) != "namespaces" {
		ref.Namespace, rest = rest[1], rest[2:]
	}
	if len(rest) > 3 {
		return nil, "", fmt.Errorf("%w: resourceName %q", ErrMalformed, name)
	}
	ref.Resource = rest[0]
	if len(rest) > 1 {
		ref.Name = rest[1]
	}
	if len(rest) > 2 {
		ref.Subresource = rest[2]
	}
	return ref, prefix + "/" + strings.Join(parts[2:], "/"), nil
}

// methodResource is the resource a methodName names: the segment after
// the version ("io.k8s.apps.v1.deployments.scale.update": deployments).
func methodResource(method, version string) string {
	segs := strings.Split(strings.TrimPrefix(method, "io.k8s."), ".")
	for i := 0; i+1 < len(segs); i++ {
		if segs[i] == version {
			return segs[i+1]
		}
	}
	return ""
}

// object is a request or response Struct as the Kubernetes object it
// holds: without the "@type" member GKE adds ("core.k8s.io/v1.ConfigMap").
// The object keeps its own apiVersion and kind (the apiserver writes them
// into the audit event's bodies) and its numbers their text.
func object(raw json.RawMessage) (*runtime.Unknown, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		if !json.Valid(raw) {
			return nil, err
		}
		// Not an object (a JSON patch's array): kept as it is.
		return &runtime.Unknown{Raw: raw, ContentType: runtime.ContentTypeJSON}, nil
	}
	delete(m, "@type")
	out, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return &runtime.Unknown{Raw: out, ContentType: runtime.ContentTypeJSON}, nil
}

// responseStatus is the response's status: exact when the response is a
// Kubernetes Status (which carries the HTTP code); otherwise from the
// entry's google.rpc.Status code, mapped to HTTP as Google's APIs map
// them, 0 being 200, or 201 for a create (which Kubernetes answers with
// 201 when it creates).
func responseStatus(p *AuditLog, resp *runtime.Unknown, verb string) *metav1.Status {
	if resp != nil {
		var s struct {
			Kind string `json:"kind"`
			Code int32  `json:"code"`
		}
		if json.Unmarshal(resp.Raw, &s) == nil && s.Kind == "Status" && s.Code != 0 {
			st := &metav1.Status{Code: s.Code}
			if s.Code >= 200 && s.Code < 300 {
				st.Status = metav1.StatusSuccess
			} else {
				st.Status = metav1.StatusFailure
			}
			return st
		}
	}
	code, msg := 0, ""
	if p.Status != nil {
		code, msg = p.Status.Code, p.Status.Message
	}
	if code == 0 {
		if verb == "create" {
			return &metav1.Status{Code: http.StatusCreated}
		}
		return &metav1.Status{Code: http.StatusOK}
	}
	return &metav1.Status{Status: metav1.StatusFailure, Code: int32(rpcToHTTP(code)), Message: msg}
}

// rpcToHTTP maps a google.rpc.Code to the HTTP status Google's APIs
// answer it with (google/rpc/code.proto).
func rpcToHTTP(code int) int {
	switch code {
	case 1:
		return 499
	case 3, 9, 11:
		return http.StatusBadRequest
	case 4:
		return http.StatusGatewayTimeout
	case 5:
		return http.StatusNotFound
	case 6, 10:
		return http.StatusConflict
	case 7:
		return http.StatusForbidden
	case 8:
		return http.StatusTooManyRequests
	case 12:
		return http.StatusNotImplemented
	case 14:
		return http.StatusServiceUnavailable
	case 16:
		return http.StatusUnauthorized
	}
	return http.StatusInternalServerError
}

// annotations are the apiserver's audit annotations: GKE writes them as
// the entry's labels ("authorization.k8s.io/decision", and any an
// admission webhook added, "observe.optionsrecord.io/..." among them).
// String members of protoPayload.metadata that look like annotations
// (a "/" in the key) are read too, the labels winning. The resource's
// labels (project, location, cluster) are not the apiserver's and are
// left out. The DelegationAnnotation is only the conversion's (delegation,
// or none): one of that key in the entry (an admission webhook can write
// any) is dropped.
func annotations(e *LogEntry, delegation string) map[string]string {
	out := map[string]string{}
	if len(e.ProtoPayload.Metadata) > 0 {
		var md map[string]json.RawMessage
		if json.Unmarshal(e.ProtoPayload.Metadata, &md) == nil {
			for k, v := range md {
				var s string
				if strings.Contains(k, "/") && json.Unmarshal(v, &s) == nil {
					out[k] = s
				}
			}
		}
	}
	for k, v := range e.Labels {
		out[k] = v
	}
	if _, ok := out["authorization.k8s.io/decision"]; !ok && len(e.ProtoPayload.AuthorizationInfo) > 0 {
		decision := "allow"
		for _, a := range e.ProtoPayload.AuthorizationInfo {
			if !a.Granted {
				decision = "forbid"
			}
		}
		out["authorization.k8s.io/decision"] = decision
	}
	delete(out, DelegationAnnotation)
	if delegation != "" {
		out[DelegationAnnotation] = delegation
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

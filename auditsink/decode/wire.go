package decode

import (
	"bytes"
	"reflect"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/store/model/jsonfast"
)

// The webhook's fast path. Nine events in ten are typically dropped by the
// rules, so decoding must cost little for an event whose objects are never
// looked at: the objects are found, not parsed, and not copied.
//
// jsonfast (sonic where it runs natively) decodes the envelope fields and
// skips each object without validating it; the object stays a slice of the
// body. This is safe because a body that is not JSON fails the envelope
// decode anyway, and an object that is kept is parsed or validated before
// it is stored (store/model's convertRaw). Strings are not copied but are
// checked: a raw control character in a string is refused, as
// encoding/json refuses it. Invalid UTF-8 is left in place, so the store's
// sanitizer replaces it and counts the event
// (options_record_events_sanitized_total), as the operations guide
// promises. Where sonic does not run natively, jsonfast decodes with
// encoding/json, which validates and copies everything and replaces
// invalid UTF-8 itself (TestWirePathsAgree).
var wire = jsonfast.Default

// wireList is an audit.k8s.io/v1 EventList as the fast path decodes it.
type wireList struct {
	Kind       string      `json:"kind"`
	APIVersion string      `json:"apiVersion"`
	Items      []wireEvent `json:"items"`
}

// wireEvent mirrors auditv1.Event field for field (TestWireEventMirrorsEvent
// keeps it so), with the objects as raw slices of the body and plain
// time.Time timestamps (metav1.MicroTime decodes through encoding/json, which
// costs more than the rest of the envelope).
type wireEvent struct {
	metav1.TypeMeta          `json:",inline"`
	Level                    auditv1.Level                   `json:"level"`
	AuditID                  types.UID                       `json:"auditID"`
	Stage                    auditv1.Stage                   `json:"stage"`
	RequestURI               string                          `json:"requestURI"`
	Verb                     string                          `json:"verb"`
	User                     authnv1.UserInfo                `json:"user"`
	ImpersonatedUser         *authnv1.UserInfo               `json:"impersonatedUser,omitempty"`
	AuthenticationMetadata   *auditv1.AuthenticationMetadata `json:"authenticationMetadata,omitempty"`
	SourceIPs                []string                        `json:"sourceIPs,omitempty"`
	UserAgent                string                          `json:"userAgent,omitempty"`
	ObjectRef                *auditv1.ObjectReference        `json:"objectRef,omitempty"`
	ResponseStatus           *metav1.Status                  `json:"responseStatus,omitempty"`
	RequestObject            rawObject                       `json:"requestObject,omitempty"`
	ResponseObject           rawObject                       `json:"responseObject,omitempty"`
	RequestReceivedTimestamp time.Time                       `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time                       `json:"stageTimestamp"`
	Annotations              map[string]string               `json:"annotations,omitempty"`
}

// rawObject is a JSON value kept as the bytes it was decoded from, not
// copied: the decoder hands it a slice of the body, which outlives it.
type rawObject []byte

// UnmarshalJSON implements json.Unmarshaler.
func (r *rawObject) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		*r = nil
		return nil
	}
	*r = b
	return nil
}

func (r rawObject) unknown() *runtime.Unknown {
	if r == nil {
		return nil
	}
	return &runtime.Unknown{Raw: r, ContentType: runtime.ContentTypeJSON}
}

// microTime is what metav1.MicroTime.UnmarshalJSON makes of t.
func microTime(t time.Time) metav1.MicroTime {
	if t.IsZero() {
		return metav1.MicroTime{}
	}
	return metav1.NewMicroTime(t.Local())
}

func (w *wireEvent) event() auditv1.Event {
	return auditv1.Event{
		TypeMeta:                 w.TypeMeta,
		Level:                    w.Level,
		AuditID:                  w.AuditID,
		Stage:                    w.Stage,
		RequestURI:               w.RequestURI,
		Verb:                     w.Verb,
		User:                     w.User,
		ImpersonatedUser:         w.ImpersonatedUser,
		AuthenticationMetadata:   w.AuthenticationMetadata,
		SourceIPs:                w.SourceIPs,
		UserAgent:                w.UserAgent,
		ObjectRef:                w.ObjectRef,
		ResponseStatus:           w.ResponseStatus,
		RequestObject:            w.RequestObject.unknown(),
		ResponseObject:           w.ResponseObject.unknown(),
		RequestReceivedTimestamp: microTime(w.RequestReceivedTimestamp),
		StageTimestamp:           microTime(w.StageTimestamp),
		Annotations:              w.Annotations,
	}
}

// warmDecoder compiles the decoder of wireList now rather than on the first
// batch (about 14 ms).
func warmDecoder() error { return wire.Pretouch(reflect.TypeFor[wireList]()) }

// decodeWire decodes body in one pass. body is read without a copy: it must
// not change while anything decoded from it is in use.
func decodeWire(body []byte) (*wireList, error) { return decodeWireWith(wire, body) }

func decodeWireWith(p jsonfast.Path, body []byte) (*wireList, error) {
	var wl wireList
	if err := p.DecodeInPlace(body, &wl, &wl.Kind); err != nil {
		return nil, err
	}
	return &wl, nil
}

// decodeEventKeepingInvalidUTF8 decodes one event (of a body decodeWire
// refused) leaving invalid UTF-8 in its strings; false where the decoder
// cannot (encoding/json's replacement stands).
func decodeEventKeepingInvalidUTF8(raw []byte, w *wireEvent) bool {
	return wire.UnmarshalKeepingInvalidUTF8(raw, w) == nil
}

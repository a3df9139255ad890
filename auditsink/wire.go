package auditsink

import (
	"bytes"
	"reflect"
	"time"
	"unsafe"

	"github.com/bytedance/sonic"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// The webhook's fast path. Nine events in ten are typically dropped by the
// rules, so decoding must cost little for an event whose objects are never
// looked at: the objects are found, not parsed, and not copied.
//
// sonic (SIMD, JIT-compiled for these types) decodes the envelope fields and
// skips each object without validating it (NoValidateJSONSkip); the object
// stays a slice of the body. This is safe because a body that is not JSON
// fails the envelope decode anyway, and an object that is kept is parsed or
// validated before it is stored (convertRaw). Strings are not copied
// (CopyString off) but are checked (ValidateString): a raw control
// character in a string is refused, as encoding/json refuses it.
var wireAPI = sonic.Config{NoValidateJSONSkip: true, ValidateString: true}.Froze()

// wireKeepAPI is wireAPI but for the UTF-8 check. ValidateString replaces
// invalid UTF-8 in a copy of the whole body before decoding it, so the
// store's sanitizer would never see it: it replaces it too, but counts the
// event (options_record_events_sanitized_total), as the operations guide
// promises. A body that wireAPI took but copied is decoded again with
// wireKeepAPI, which differs only in leaving the invalid bytes in place.
var wireKeepAPI = sonic.Config{NoValidateJSONSkip: true}.Froze()

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
func warmDecoder() error { return sonic.Pretouch(reflect.TypeFor[wireList]()) }

// decodeWire decodes body in one pass. body is read as a string without a
// copy: it must not change while anything decoded from it is in use.
func decodeWire(body []byte) (*wireList, error) {
	var wl wireList
	str := unsafe.String(unsafe.SliceData(body), len(body))
	if err := wireAPI.UnmarshalFromString(str, &wl); err != nil {
		return nil, err
	}
	if len(wl.Kind) > 0 && !within(unsafe.StringData(wl.Kind), body) {
		// Decoded from a copy: most likely one with invalid UTF-8
		// replaced (or a kind written with escapes, which costs a second
		// decode and changes nothing).
		var keep wireList
		if err := wireKeepAPI.UnmarshalFromString(str, &keep); err == nil {
			return &keep, nil
		}
	}
	return &wl, nil
}

// within tells whether p points into b.
func within(p *byte, b []byte) bool {
	if len(b) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return uintptr(unsafe.Pointer(p))-start < uintptr(len(b))
}

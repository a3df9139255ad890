package filter

import (
	"bytes"
	"errors"

	"github.com/options-record/options-record/store/model/jsonscan"
)

// Noise detection: does a write change anything but status-like fields?
//
// The answer must never be "yes, only noise" for a write that changed
// something else, or a crafted request could hide a real change. So the
// scanner below is an allow-list over strictly valid JSON: anything it does
// not fully understand (YAML, escaped keys, unknown operations, deep nesting,
// server-side apply bodies) counts as a real change. The patch is read with
// jsonscan, strictly.

// statusKey is the one top-level key of a merge or strategic merge patch
// that never makes the patch a real change; "metadata" may appear too, with
// only the keys statusOnlyMetadata allows. "apiVersion" and "kind" are
// deliberately not allowed: they mark a server-side apply body, and an apply
// that omits fields its manager owned removes those fields.
const statusKey = "status"

// statusOnlyMetadata reports whether a metadata key in a merge patch is
// server-managed, or only identifies the object or sets a precondition.
// generation is not among them: a client cannot set it, and a change of it
// means the spec changed.
func statusOnlyMetadata(key []byte) bool {
	switch string(key) {
	case "managedFields", "resourceVersion", "creationTimestamp", "selfLink",
		"uid", "name", "namespace":
		return true
	}
	return false
}

// statusOnlyPointerMetadata is the same for the second segment of a JSON
// patch path under /metadata. Identity fields are absent: a JSON patch that
// replaces them is an attempted change, not a precondition.
func statusOnlyPointerMetadata(seg []byte) bool {
	switch string(seg) {
	case "managedFields", "resourceVersion", "creationTimestamp", "selfLink":
		return true
	}
	return false
}

// maxNoiseDepth bounds the nesting the scanner follows; deeper bodies count
// as real changes.
const maxNoiseDepth = 200

// errRealChange stops a walk: the patch changes more than status.
var errRealChange = errors.New("a real change")

// noiseScan is how the patch is read: strictly valid JSON, its values
// inside at most maxNoiseDepth objects and arrays of it.
var noiseScan = jsonscan.Mode{Strict: true, MaxNest: maxNoiseDepth}

// patchIsStatusOnly reports whether a PATCH body (the raw requestObject of a
// patch audit event: a JSON merge patch, a strategic merge patch or a JSON
// patch array) touches only status, managed fields, the resource version and
// similar server-managed fields. An empty patch ({} or []) is a no-op and
// counts as status-only.
func patchIsStatusOnly(body []byte) bool {
	i := jsonscan.Space(body, 0)
	if i == len(body) {
		return false
	}
	var (
		end int
		err error
	)
	switch body[i] {
	case '{':
		end, err = noiseScan.Object(body, i, func(m jsonscan.Member) error { return mergeMemberIsStatusOnly(body, m) })
	case '[':
		end, err = noiseScan.Array(body, i, func(start, _ int) error { return jsonPatchOpIsStatusOnly(body, start) })
	default:
		return false
	}
	return err == nil && jsonscan.Space(body, end) == len(body)
}

// mergeMemberIsStatusOnly checks a top-level member of a merge patch. Keys
// written with escapes count as a real change: they could spell an allowed
// key differently.
func mergeMemberIsStatusOnly(body []byte, m jsonscan.Member) error {
	if m.Escaped() {
		return errRealChange
	}
	switch string(m.Key) {
	case statusKey:
		return nil
	case "metadata":
		if body[m.Value] != '{' {
			return errRealChange
		}
		_, err := noiseScan.Object(body, m.Value, func(m jsonscan.Member) error {
			if m.Escaped() || !statusOnlyMetadata(m.Key) {
				return errRealChange
			}
			return nil
		})
		return err
	}
	return errRealChange
}

// jsonPatchOpIsStatusOnly checks one operation of a JSON patch, at
// body[start].
func jsonPatchOpIsStatusOnly(body []byte, start int) error {
	if body[start] != '{' {
		return errRealChange
	}
	var op, path, from []byte
	var haveOp, havePath, haveFrom bool
	_, err := noiseScan.Object(body, start, func(m jsonscan.Member) error {
		if m.Escaped() {
			return errRealChange
		}
		var dst *[]byte
		var seen *bool
		switch string(m.Key) {
		case "op":
			dst, seen = &op, &haveOp
		case "path":
			dst, seen = &path, &havePath
		case "from":
			dst, seen = &from, &haveFrom
		default:
			return nil
		}
		v := body[m.Value:m.End]
		if *seen || v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 {
			return errRealChange
		}
		*dst, *seen = v[1:len(v)-1], true
		return nil
	})
	if err != nil || !haveOp {
		return errRealChange
	}
	switch string(op) {
	case "test":
		return nil
	case "add", "remove", "replace", "copy":
		if havePath && pointerIsStatusOnly(path) {
			return nil
		}
	case "move":
		if havePath && haveFrom && pointerIsStatusOnly(path) && pointerIsStatusOnly(from) {
			return nil
		}
	}
	return errRealChange
}

// pointerIsStatusOnly reports whether a JSON pointer (RFC 6901) addresses
// status or a server-managed metadata field, or something inside them.
// Segments are compared unescaped-as-is: a "~0" or "~1" in them never
// matches, which errs on the side of a real change.
func pointerIsStatusOnly(p []byte) bool {
	first, rest, ok := nextSegment(p)
	if !ok {
		return false
	}
	switch string(first) {
	case statusKey:
		return true
	case "metadata":
		second, _, ok := nextSegment(rest)
		return ok && statusOnlyPointerMetadata(second)
	}
	return false
}

// nextSegment splits "/seg/rest" into "seg" and "/rest".
func nextSegment(p []byte) (seg, rest []byte, ok bool) {
	if len(p) == 0 || p[0] != '/' {
		return nil, nil, false
	}
	p = p[1:]
	for i, c := range p {
		if c == '/' {
			return p[:i], p[i:], true
		}
	}
	return p, nil, true
}

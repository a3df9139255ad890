package auditsink

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// lastApplied is the annotation kubectl apply writes; on a Secret it holds
// the data in clear.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// digestPrefix marks a value replaced by its SHA-256 digest. Restores refuse
// versions holding such values.
const digestPrefix = "sha256:"

// digestValue is the digest of a Secret value. For data (base64) it digests
// the decoded bytes, so the same value in data and stringData digests alike.
func digestValue(v any, base64Encoded bool) any {
	s, ok := v.(string)
	if !ok {
		b, _ := json.Marshal(v)
		s = string(b)
	}
	b := []byte(s)
	if base64Encoded {
		if dec, err := base64.StdEncoding.DecodeString(s); err == nil {
			b = dec
		}
	}
	sum := sha256.Sum256(b)
	return digestPrefix + hex.EncodeToString(sum[:])
}

func digestMap(v any, base64Encoded bool) any {
	m, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			return nil
		}
		return digestValue(v, base64Encoded)
	}
	for k, val := range m {
		if val != nil {
			m[k] = digestValue(val, base64Encoded)
		}
	}
	return m
}

// redactSecretFields digests data, stringData and the last-applied
// annotation of a Secret-shaped JSON object (an object or a merge patch).
func redactSecretFields(obj map[string]any) {
	if d, ok := obj["data"]; ok {
		obj["data"] = digestMap(d, true)
	}
	if d, ok := obj["stringData"]; ok {
		obj["stringData"] = digestMap(d, false)
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		if ann, ok := md["annotations"].(map[string]any); ok {
			if v, ok := ann[lastApplied]; ok && v != nil {
				ann[lastApplied] = digestValue(v, false)
			}
		}
	}
}

// digestObject digests the values of a Secret object. If the bytes are not a
// JSON object, nothing of them is kept.
func digestObject(raw []byte) []byte {
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil
	}
	redactSecretFields(obj)
	out, err := json.Marshal(obj)
	if err != nil {
		return nil
	}
	return out
}

// digestRequest digests the values in a request body on a Secret: an object
// (create, update, merge or strategic merge patch, apply), or a JSON patch.
// A body of any other shape is dropped: nothing of it is kept in clear.
func digestRequest(raw []byte) []byte {
	var body any
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil
	}
	switch b := body.(type) {
	case map[string]any:
		redactSecretFields(b)
	case []any:
		for _, op := range b {
			o, ok := op.(map[string]any)
			if !ok {
				return nil
			}
			redactJSONPatchOp(o)
		}
	default:
		return nil
	}
	out, err := json.Marshal(body)
	if err != nil {
		return nil
	}
	return out
}

// redactJSONPatchOp digests the value of a JSON-patch operation that writes
// under /data, /stringData, /metadata/annotations or the whole document.
func redactJSONPatchOp(op map[string]any) {
	path, _ := op["path"].(string)
	val, has := op["value"]
	if !has || val == nil {
		return
	}
	switch {
	case path == "" || path == "/":
		if m, ok := val.(map[string]any); ok {
			redactSecretFields(m)
		} else {
			op["value"] = digestValue(val, false)
		}
	case path == "/data":
		op["value"] = digestMap(val, true)
	case path == "/stringData":
		op["value"] = digestMap(val, false)
	case strings.HasPrefix(path, "/data/"):
		op["value"] = digestValue(val, true)
	case strings.HasPrefix(path, "/stringData/"):
		op["value"] = digestValue(val, false)
	case path == "/metadata/annotations":
		if m, ok := val.(map[string]any); ok {
			if v, ok := m[lastApplied]; ok && v != nil {
				m[lastApplied] = digestValue(v, false)
			}
		}
	case path == "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration":
		op["value"] = digestValue(val, false)
	case path == "/metadata":
		if m, ok := val.(map[string]any); ok {
			redactSecretFields(map[string]any{"metadata": m})
		}
	}
}

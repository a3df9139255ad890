package auditsink

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// lastApplied is the annotation kubectl apply writes; on a Secret it holds
// the data in clear.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// admissionPatchPrefix starts the audit annotations in which the apiserver
// records the JSON patch of each mutating admission webhook (at Request level
// and above): a webhook that injects a Secret's data puts it there.
const admissionPatchPrefix = "patch.webhook.admission.k8s.io/"

// The prefixes of a value replaced by its digest. Restores refuse versions
// holding such values.
const (
	// KeyedDigestPrefix: HMAC-SHA256 under the sink's secret digest key.
	KeyedDigestPrefix = "hmac-sha256:"
	// PlainDigestPrefix: SHA-256 without a key (no key configured).
	PlainDigestPrefix = "sha256:"
)

// SecretDigester replaces the values of Secrets by digests, so that a diff
// still shows that a key changed. With a key (serve always has one) the
// digest is an HMAC-SHA256: whoever reads the database, a backup or an export
// cannot test guesses of a low-entropy value (a password) against it without
// the key, which is kept out of the database. A nil *SecretDigester digests
// with plain SHA-256. All sink replicas of a cluster must share the key, or
// the same value digests differently depending on the replica.
type SecretDigester struct {
	key []byte
}

// MinSecretDigestKeyBytes is the shortest key NewSecretDigester accepts.
const MinSecretDigestKeyBytes = 16

// NewSecretDigester returns a digester keyed with key (at least
// MinSecretDigestKeyBytes bytes).
func NewSecretDigester(key []byte) (*SecretDigester, error) {
	if len(key) < MinSecretDigestKeyBytes {
		return nil, fmt.Errorf("secret digest key: %d bytes, want at least %d", len(key), MinSecretDigestKeyBytes)
	}
	return &SecretDigester{key: append([]byte(nil), key...)}, nil
}

// DeriveKey returns a 32-byte key for purpose, derived from the digest key
// (HMAC-SHA256), for other secrets the replicas must share; nil for a nil
// digester.
func (d *SecretDigester) DeriveKey(purpose string) []byte {
	if d == nil {
		return nil
	}
	m := hmac.New(sha256.New, d.key)
	m.Write([]byte("options-record/" + purpose))
	return m.Sum(nil)
}

// value is the digest of a Secret value. For data (base64) it digests the
// decoded bytes, so the same value in data and stringData digests alike.
func (d *SecretDigester) value(v any, base64Encoded bool) any {
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
	if d == nil {
		sum := sha256.Sum256(b)
		return PlainDigestPrefix + hex.EncodeToString(sum[:])
	}
	m := hmac.New(sha256.New, d.key)
	m.Write(b)
	return KeyedDigestPrefix + hex.EncodeToString(m.Sum(nil))
}

func (d *SecretDigester) digestMap(v any, base64Encoded bool) any {
	m, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			return nil
		}
		return d.value(v, base64Encoded)
	}
	for k, val := range m {
		if val != nil {
			m[k] = d.value(val, base64Encoded)
		}
	}
	return m
}

// redactSecretFields digests data, stringData and the last-applied
// annotation of a Secret-shaped JSON object (an object or a merge patch).
func (d *SecretDigester) redactSecretFields(obj map[string]any) {
	if v, ok := obj["data"]; ok {
		obj["data"] = d.digestMap(v, true)
	}
	if v, ok := obj["stringData"]; ok {
		obj["stringData"] = d.digestMap(v, false)
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		if ann, ok := md["annotations"].(map[string]any); ok {
			if v, ok := ann[lastApplied]; ok && v != nil {
				ann[lastApplied] = d.value(v, false)
			}
		}
	}
}

// object digests the values of a Secret object. If the bytes are not a
// JSON object, nothing of them is kept.
func (d *SecretDigester) object(raw []byte) []byte {
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil
	}
	d.redactSecretFields(obj)
	out, err := json.Marshal(obj)
	if err != nil {
		return nil
	}
	return out
}

// request digests the values in a request body on a Secret: an object
// (create, update, merge or strategic merge patch, apply), or a JSON patch.
// A body of any other shape is dropped: nothing of it is kept in clear.
func (d *SecretDigester) request(raw []byte) []byte {
	var body any
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil
	}
	switch b := body.(type) {
	case map[string]any:
		d.redactSecretFields(b)
	case []any:
		for _, op := range b {
			o, ok := op.(map[string]any)
			if !ok {
				return nil
			}
			d.redactJSONPatchOp(o)
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

// annotations returns the event's audit annotations with the Secret values
// in admission webhooks' patches digested. An admission patch annotation
// that does not parse is left out: nothing of it is kept in clear.
func (d *SecretDigester) annotations(ann map[string]string) map[string]string {
	var out map[string]string
	for k, v := range ann {
		if !strings.HasPrefix(k, admissionPatchPrefix) {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(ann))
			for k2, v2 := range ann {
				out[k2] = v2
			}
		}
		delete(out, k)
		var rec map[string]any
		if json.Unmarshal([]byte(v), &rec) != nil {
			continue
		}
		if p, ok := rec["patch"]; ok {
			ops, ok := p.([]any)
			if !ok {
				continue
			}
			for _, op := range ops {
				o, ok := op.(map[string]any)
				if !ok {
					continue
				}
				d.redactJSONPatchOp(o)
			}
		}
		if b, err := json.Marshal(rec); err == nil {
			out[k] = string(b)
		}
	}
	if out == nil {
		return ann
	}
	return out
}

// redactJSONPatchOp digests the value of a JSON-patch operation that writes
// under /data, /stringData, /metadata/annotations or the whole document.
func (d *SecretDigester) redactJSONPatchOp(op map[string]any) {
	path, _ := op["path"].(string)
	val, has := op["value"]
	if !has || val == nil {
		return
	}
	switch {
	case path == "" || path == "/":
		if m, ok := val.(map[string]any); ok {
			d.redactSecretFields(m)
		} else {
			op["value"] = d.value(val, false)
		}
	case path == "/data":
		op["value"] = d.digestMap(val, true)
	case path == "/stringData":
		op["value"] = d.digestMap(val, false)
	case strings.HasPrefix(path, "/data/"):
		op["value"] = d.value(val, true)
	case strings.HasPrefix(path, "/stringData/"):
		op["value"] = d.value(val, false)
	case path == "/metadata/annotations":
		if m, ok := val.(map[string]any); ok {
			if v, ok := m[lastApplied]; ok && v != nil {
				m[lastApplied] = d.value(v, false)
			}
		}
	case path == "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration":
		op["value"] = d.value(val, false)
	case path == "/metadata":
		if m, ok := val.(map[string]any); ok {
			d.redactSecretFields(map[string]any{"metadata": m})
		}
	}
}

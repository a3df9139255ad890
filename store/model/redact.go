package model

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// admissionPatchPrefix starts the audit annotations in which the apiserver
// records the JSON patch of each mutating admission webhook (at Request level
// and above): a webhook that injects a Secret's data puts it there.
const admissionPatchPrefix = "patch.webhook.admission.k8s.io/"

// The prefixes of a value replaced by its digest. Restores refuse versions
// holding such values.
const (
	// KeyedDigestPrefix: HMAC-SHA256, under a key derived from the sink's
	// secret digest key for this use only, of the value and its place
	// (cluster, namespace, name, field).
	KeyedDigestPrefix = "hmac-sha256-v2:"
	// LegacyKeyedDigestPrefix: the digests recorded before KeyedDigestPrefix
	// (HMAC-SHA256 of the value alone, under the digest key itself). They
	// stay in the rows that hold them; they cannot be compared with v2
	// digests (across the change every digested value shows as replaced
	// once).
	LegacyKeyedDigestPrefix = "hmac-sha256:"
	// PlainDigestPrefix: SHA-256 of the value without a key, which
	// records of old releases may hold (no digester was an unkeyed digest;
	// it is now ErrNoDigester). The restore paths still recognize it.
	PlainDigestPrefix = "sha256:"
)

// ErrNoDigester is converting or baselining a Secret without a digester:
// its values are never stored with a weaker digest than the keyed one.
var ErrNoDigester = errors.New("no secret digest key: a Secret's values are stored only as keyed digests")

// The HKDF labels of the keys derived from the secret digest key. Every use
// has its own key, so that no recorded digest is ever a key: a tenant who
// records a Secret whose value is a label learns a digest, not a key.
const (
	valueDigestLabel = "options-record/v2 secret value digest"
	derivedKeyLabel  = "options-record/v2 derived key: "
)

// SecretPlace is where a Secret value is recorded. Value digests are bound
// to it: equal values in different Secrets, namespaces or clusters digest
// differently, so a digest does not link them, while the versions of one
// Secret still show which keys changed.
type SecretPlace struct {
	Cluster, Namespace, Name string
}

// SecretDigester replaces the values of Secrets by digests, so that a diff
// still shows that a key changed. With a key (serve always has one) the
// digest is an HMAC-SHA256: whoever reads the database, a backup or an export
// cannot test guesses of a low-entropy value (a password) against it without
// the key, which is kept out of the database. Without one (nil) a Secret is
// not converted (ErrNoDigester). All sink replicas of a cluster must share the key, or
// the same value digests differently depending on the replica.
type SecretDigester struct {
	master   []byte // the operator's key: only ever an HKDF input
	valueKey []byte // HKDF(master, valueDigestLabel)
}

// MinSecretDigestKeyBytes is the shortest key NewSecretDigester accepts.
const MinSecretDigestKeyBytes = 16

// NewSecretDigester returns a digester keyed with key (at least
// MinSecretDigestKeyBytes bytes).
func NewSecretDigester(key []byte) (*SecretDigester, error) {
	if len(key) < MinSecretDigestKeyBytes {
		return nil, fmt.Errorf("secret digest key: %d bytes, want at least %d", len(key), MinSecretDigestKeyBytes)
	}
	master := append([]byte(nil), key...)
	vk, err := hkdf.Key(sha256.New, master, nil, valueDigestLabel, 32)
	if err != nil {
		return nil, fmt.Errorf("secret digest key: derive the value digest key: %w", err)
	}
	return &SecretDigester{master: master, valueKey: vk}, nil
}

// DeriveKey returns a 32-byte key for purpose (HKDF-SHA256 of the digest key,
// with a label of its own: never the key of value digests), for other
// secrets the replicas must share; nil for a nil digester.
func (d *SecretDigester) DeriveKey(purpose string) []byte {
	if d == nil {
		return nil
	}
	k, err := hkdf.Key(sha256.New, d.master, nil, derivedKeyLabel+purpose, 32)
	if err != nil {
		panic(fmt.Sprintf("hkdf of 32 bytes failed: %v", err)) // only for lengths over 255*32
	}
	return k
}

// at returns the digester of values recorded at place p.
func (d *SecretDigester) at(p SecretPlace) placeDigester { return placeDigester{d: d, place: p} }

// placeDigester digests the values of one Secret (or a request or
// annotation about it).
type placeDigester struct {
	d     *SecretDigester
	place SecretPlace
}

// value is the digest of a Secret value under field (its data or
// stringData key, or the annotation it is in). For data (base64) it digests
// the decoded bytes, so the same value in data and stringData digests alike.
func (pd placeDigester) value(field string, v any, base64Encoded bool) any {
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
	if pd.d == nil {
		sum := sha256.Sum256(b)
		return PlainDigestPrefix + hex.EncodeToString(sum[:])
	}
	m := hmac.New(sha256.New, pd.d.valueKey)
	for _, f := range []string{pd.place.Cluster, pd.place.Namespace, pd.place.Name, field} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		m.Write(n[:])
		m.Write([]byte(f))
	}
	m.Write(b)
	return KeyedDigestPrefix + hex.EncodeToString(m.Sum(nil))
}

func (pd placeDigester) digestMap(v any, base64Encoded bool) any {
	m, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			return nil
		}
		return pd.value("", v, base64Encoded)
	}
	for k, val := range m {
		if val != nil {
			m[k] = pd.value(k, val, base64Encoded)
		}
	}
	return m
}

// clearSecretAnnotation says whether a Secret annotation is kept in clear.
// Annotations are free text that tools use to carry data (credentials in a
// URL, a copy of the data in last-applied-configuration): every one is
// digested except those known to name things rather than hold content,
// which forensics needs to read:
//   - kubernetes.io/service-account.name and .uid: the ServiceAccount a
//     token Secret belongs to, set by Kubernetes;
//   - cert-manager.io/*: the issuer, certificate and names a TLS Secret was
//     issued for (public in the certificate itself);
//   - meta.helm.sh/release-name and release-namespace: who installed it.
func clearSecretAnnotation(key string) bool {
	switch key {
	case "kubernetes.io/service-account.name", "kubernetes.io/service-account.uid",
		"meta.helm.sh/release-name", "meta.helm.sh/release-namespace":
		return true
	}
	return strings.HasPrefix(key, "cert-manager.io/")
}

// annotationField is the field an annotation's digest is bound to (not a
// data key: those cannot hold a slash).
func annotationField(key string) string { return "metadata.annotations/" + key }

// redactAnnotations digests the values of a Secret's annotations, but for
// those clearSecretAnnotation keeps.
func (pd placeDigester) redactAnnotations(ann map[string]any) {
	for k, v := range ann {
		if v != nil && !clearSecretAnnotation(k) {
			ann[k] = pd.value(annotationField(k), v, false)
		}
	}
}

// redactSecretFields digests data, stringData and the annotations of a
// Secret-shaped JSON object (an object or a merge patch).
func (pd placeDigester) redactSecretFields(obj map[string]any) {
	if v, ok := obj["data"]; ok {
		obj["data"] = pd.digestMap(v, true)
	}
	if v, ok := obj["stringData"]; ok {
		obj["stringData"] = pd.digestMap(v, false)
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		if ann, ok := md["annotations"].(map[string]any); ok {
			pd.redactAnnotations(ann)
		}
	}
}

// object digests the values of a Secret object. If the bytes are not a
// JSON object, nothing of them is kept.
func (pd placeDigester) object(raw []byte) []byte {
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil
	}
	pd.redactSecretFields(obj)
	out, err := json.Marshal(obj)
	if err != nil {
		return nil
	}
	return out
}

// request digests the values in a request body on a Secret: an object
// (create, update, merge or strategic merge patch, apply), or a JSON patch.
// A body of any other shape is dropped: nothing of it is kept in clear.
func (pd placeDigester) request(raw []byte) []byte {
	var body any
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil
	}
	switch b := body.(type) {
	case map[string]any:
		pd.redactSecretFields(b)
	case []any:
		for _, op := range b {
			o, ok := op.(map[string]any)
			if !ok {
				return nil
			}
			pd.redactJSONPatchOp(o)
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
func (pd placeDigester) annotations(ann map[string]string) map[string]string {
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
				pd.redactJSONPatchOp(o)
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
func (pd placeDigester) redactJSONPatchOp(op map[string]any) {
	path, _ := op["path"].(string)
	val, has := op["value"]
	if !has || val == nil {
		return
	}
	switch {
	case path == "" || path == "/":
		if m, ok := val.(map[string]any); ok {
			pd.redactSecretFields(m)
		} else {
			op["value"] = pd.value("", val, false)
		}
	case path == "/data":
		op["value"] = pd.digestMap(val, true)
	case path == "/stringData":
		op["value"] = pd.digestMap(val, false)
	case strings.HasPrefix(path, "/data/"):
		op["value"] = pd.value(pointerToken(strings.TrimPrefix(path, "/data/")), val, true)
	case strings.HasPrefix(path, "/stringData/"):
		op["value"] = pd.value(pointerToken(strings.TrimPrefix(path, "/stringData/")), val, false)
	case path == "/metadata/annotations":
		if m, ok := val.(map[string]any); ok {
			pd.redactAnnotations(m)
		} else {
			op["value"] = pd.value(annotationField(""), val, false)
		}
	case strings.HasPrefix(path, "/metadata/annotations/"):
		if key := pointerToken(strings.TrimPrefix(path, "/metadata/annotations/")); !clearSecretAnnotation(key) {
			op["value"] = pd.value(annotationField(key), val, false)
		}
	case path == "/metadata":
		if m, ok := val.(map[string]any); ok {
			pd.redactSecretFields(map[string]any{"metadata": m})
		}
	}
}

// pointerToken unescapes one JSON pointer token (RFC 6901).
func pointerToken(t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
}

// secretValues are the values a request body on a Secret carries in clear
// (data decoded and as sent, stringData, annotations digested by
// redactAnnotations), longest first: what an error message may echo.
func secretValues(raw []byte) []string {
	var body any
	if json.Unmarshal(raw, &body) != nil {
		return nil
	}
	seen := map[string]bool{}
	add := func(v any, base64Encoded bool) {
		str, ok := v.(string)
		if !ok || str == "" {
			return
		}
		seen[str] = true
		if base64Encoded {
			if dec, err := base64.StdEncoding.DecodeString(str); err == nil && len(dec) > 0 {
				seen[string(dec)] = true
			}
		}
	}
	addMap := func(v any, base64Encoded bool) {
		if m, ok := v.(map[string]any); ok {
			for _, x := range m {
				add(x, base64Encoded)
			}
		}
	}
	fromObject := func(obj map[string]any) {
		addMap(obj["data"], true)
		addMap(obj["stringData"], false)
		if md, ok := obj["metadata"].(map[string]any); ok {
			if ann, ok := md["annotations"].(map[string]any); ok {
				for k, v := range ann {
					if !clearSecretAnnotation(k) {
						add(v, false)
					}
				}
			}
		}
	}
	switch b := body.(type) {
	case map[string]any:
		fromObject(b)
	case []any:
		for _, op := range b {
			o, _ := op.(map[string]any)
			path, _ := o["path"].(string)
			switch val := o["value"]; {
			case path == "" || path == "/":
				if m, ok := val.(map[string]any); ok {
					fromObject(m)
				}
			case path == "/data" || path == "/stringData":
				addMap(val, path == "/data")
			case strings.HasPrefix(path, "/data/"), strings.HasPrefix(path, "/stringData/"), strings.HasPrefix(path, "/metadata/annotations/"):
				add(val, strings.HasPrefix(path, "/data/"))
			}
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) || len(out[i]) == len(out[j]) && out[i] < out[j] })
	return out
}

// scrubSecretValues replaces every occurrence of values in s.
func scrubSecretValues(s string, values []string) string {
	for _, v := range values {
		s = strings.ReplaceAll(s, v, "(a Secret value)")
	}
	return s
}

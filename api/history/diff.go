package history

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// DiffOptions say what Diff compares.
type DiffOptions struct {
	// IncludeStatus compares status too.
	IncludeStatus bool
}

// diffIgnoredMetadata are the server-set metadata fields Diff leaves out.
var diffIgnoredMetadata = []string{
	"managedFields", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
	"deletionGracePeriodSeconds", "uid", "selfLink",
}

// DiffIgnored lists the fields Diff leaves out, as JSON pointers.
func DiffIgnored(o DiffOptions) []string {
	var out []string
	for _, f := range diffIgnoredMetadata {
		out = append(out, "/metadata/"+f)
	}
	if !o.IncludeStatus {
		out = append(out, "/status")
	}
	return out
}

// Diff returns the changes that turn the object from into the object to,
// as JSON pointers in a stable order, leaving out server-set noise
// (managedFields, resourceVersion, generation, uid, timestamps and, unless
// asked, status). A nil object is an absent one: the diff is then one add
// or remove of the whole object (path ""). Neither object is modified.
func Diff(from, to map[string]any, o DiffOptions) []DiffChange {
	var out []DiffChange
	switch {
	case from == nil && to == nil:
		return nil
	case from == nil:
		return []DiffChange{{Op: "add", Path: "", To: withoutNoise(to, o)}}
	case to == nil:
		return []DiffChange{{Op: "remove", Path: "", From: withoutNoise(from, o)}}
	}
	diffValues(withoutNoise(from, o), withoutNoise(to, o), "", &out)
	return out
}

// withoutNoise is a shallow-enough copy of obj without the ignored fields:
// the top level and metadata are copied, the rest is shared (read only).
func withoutNoise(obj map[string]any, o DiffOptions) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	if !o.IncludeStatus {
		delete(out, "status")
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		m := make(map[string]any, len(md))
		for k, v := range md {
			m[k] = v
		}
		for _, f := range diffIgnoredMetadata {
			delete(m, f)
		}
		out["metadata"] = m
	}
	return out
}

func diffValues(a, b any, path string, out *[]DiffChange) {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(av)+len(bv))
		for k := range av {
			keys = append(keys, k)
		}
		for k := range bv {
			if _, ok := av[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := path + "/" + escapePointer(k)
			x, inA := av[k]
			y, inB := bv[k]
			switch {
			case !inB:
				*out = append(*out, DiffChange{Op: "remove", Path: p, From: x})
			case !inA:
				*out = append(*out, DiffChange{Op: "add", Path: p, To: y})
			default:
				diffValues(x, y, p, out)
			}
		}
		return
	case []any:
		bv, ok := b.([]any)
		if !ok {
			break
		}
		n := min(len(av), len(bv))
		for i := 0; i < n; i++ {
			diffValues(av[i], bv[i], path+"/"+strconv.Itoa(i), out)
		}
		// Removals from the end first, so the pointers stay valid when
		// applied in order.
		for i := len(av) - 1; i >= n; i-- {
			*out = append(*out, DiffChange{Op: "remove", Path: path + "/" + strconv.Itoa(i), From: av[i]})
		}
		for i := n; i < len(bv); i++ {
			*out = append(*out, DiffChange{Op: "add", Path: path + "/" + strconv.Itoa(i), To: bv[i]})
		}
		return
	}
	if !equalJSON(a, b) {
		*out = append(*out, DiffChange{Op: "replace", Path: path, From: a, To: b})
	}
}

// equalJSON compares decoded JSON scalars and values, treating numbers of
// different Go types (int64 from the cluster, float64 from encoding/json)
// as equal when their values are.
func equalJSON(a, b any) bool {
	if x, ok := number(a); ok {
		y, ok := number(b)
		return ok && x == y
	}
	return reflect.DeepEqual(a, b)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	}
	return 0, false
}

// escapePointer escapes a key for a JSON pointer (RFC 6901).
func escapePointer(k string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
}

// DecodeObject decodes a stored object as unstructured content does
// (integers as int64).
func DecodeObject(raw []byte) (map[string]any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("decode stored object: %w", err)
	}
	return obj, nil
}

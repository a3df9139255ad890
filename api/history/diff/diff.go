package diff

import (
	"reflect"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// Change is one difference, at a JSON pointer (RFC 6901).
type Change struct {
	Op   string `json:"op" doc:"add, remove or replace"`
	Path string `json:"path" doc:"JSON pointer (RFC 6901) into the object"`
	From any    `json:"from,omitempty" doc:"the value before (remove, replace)"`
	To   any    `json:"to,omitempty" doc:"the value after (add, replace)"`
}

// Options say what Diff compares.
type Options struct {
	// IncludeStatus compares status too.
	IncludeStatus bool
	// IncludeServerFields compares the server-set metadata too
	// (resourceVersion, generation, uid, timestamps). managedFields are
	// never compared: the record stores states without them, and a state
	// recorded before it did keeps its own, which would show as a change
	// across the upgrade.
	IncludeServerFields bool
}

// ignoredMetadata are the server-set metadata fields Diff leaves out.
var ignoredMetadata = []string{
	"managedFields", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
	"deletionGracePeriodSeconds", "uid", "selfLink",
}

// neverCompared are the metadata fields left out even with
// IncludeServerFields.
var neverCompared = []string{"managedFields"}

// ignoredMetadata are the metadata fields o leaves out.
func (o Options) ignoredMetadata() []string {
	if o.IncludeServerFields {
		return neverCompared
	}
	return ignoredMetadata
}

// Ignored lists the fields Diff leaves out, as JSON pointers.
func Ignored(o Options) []string {
	var out []string
	for _, f := range o.ignoredMetadata() {
		out = append(out, "/metadata/"+f)
	}
	if !o.IncludeStatus {
		out = append(out, "/status")
	}
	return out
}

// Diff returns the changes that turn the object from into the object to,
// leaving out server-set noise (managedFields, resourceVersion,
// generation, uid, timestamps and, unless asked, status). A nil object is
// an absent one: the diff is then one add or remove of the whole object
// (path ""). Neither object is modified.
//
// Applied in order as a JSON patch, the changes turn from into to: within
// a list, removals come first (from the end), then additions (in order),
// then the changes inside the elements both have, at their new positions.
func Diff(from, to map[string]any, o Options) []Change {
	var out []Change
	switch {
	case from == nil && to == nil:
		return nil
	case from == nil:
		return []Change{{Op: "add", Path: "", To: withoutNoise(to, o)}}
	case to == nil:
		return []Change{{Op: "remove", Path: "", From: withoutNoise(from, o)}}
	}
	meta := schemaFor(to)
	if meta == nil {
		meta = schemaFor(from)
	}
	d := differ{out: &out}
	d.values(withoutNoise(from, o), withoutNoise(to, o), "", meta)
	return out
}

// withoutNoise is a shallow-enough copy of obj without the ignored fields:
// the top level and metadata are copied, the rest is shared (read only).
func withoutNoise(obj map[string]any, o Options) map[string]any {
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
		for _, f := range o.ignoredMetadata() {
			delete(m, f)
		}
		out["metadata"] = m
	}
	return out
}

type differ struct{ out *[]Change }

func (d differ) add(c Change) { *d.out = append(*d.out, c) }

// values compares a and b at path; meta describes the Go type there, when
// the object is of a built-in type (nil otherwise).
func (d differ) values(a, b any, path string, meta strategicpatch.LookupPatchMeta) {
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
				d.add(Change{Op: "remove", Path: p, From: x})
			case !inA:
				d.add(Change{Op: "add", Path: p, To: y})
			default:
				d.field(x, y, p, k, meta)
			}
		}
		return
	case []any:
		if bv, ok := b.([]any); ok {
			d.list(av, bv, path, nil, "")
			return
		}
	}
	if !equalJSON(a, b) {
		d.add(Change{Op: "replace", Path: path, From: a, To: b})
	}
}

// field compares the values of field k of a struct described by meta.
func (d differ) field(x, y any, path, k string, meta strategicpatch.LookupPatchMeta) {
	if meta == nil {
		d.values(x, y, path, nil)
		return
	}
	switch x.(type) {
	case []any:
		if yv, ok := y.([]any); ok {
			elem, pm, err := meta.LookupPatchMetadataForSlice(k)
			if err != nil {
				elem, pm = nil, strategicpatch.PatchMeta{}
			}
			d.list(x.([]any), yv, path, elem, pm.GetPatchMergeKey())
			return
		}
	case map[string]any:
		sub, _, err := meta.LookupPatchMetadataForStruct(k)
		if err != nil {
			sub = nil
		}
		d.values(x, y, path, sub)
		return
	}
	d.values(x, y, path, nil)
}

// list compares two lists: by key when key names one that every element
// of both has, once; else by position.
func (d differ) list(a, b []any, path string, elem strategicpatch.LookupPatchMeta, key string) {
	if ka, ok := keysOf(a, key); ok {
		if kb, ok := keysOf(b, key); ok && sameOrder(ka, kb) {
			d.keyed(a, b, ka, kb, path, elem)
			return
		}
	}
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		d.values(a[i], b[i], path+"/"+strconv.Itoa(i), elem)
	}
	// Removals from the end first, so the pointers stay valid when
	// applied in order.
	for i := len(a) - 1; i >= n; i-- {
		d.add(Change{Op: "remove", Path: path + "/" + strconv.Itoa(i), From: a[i]})
	}
	for i := n; i < len(b); i++ {
		d.add(Change{Op: "add", Path: path + "/" + strconv.Itoa(i), To: b[i]})
	}
}

// keyed compares lists whose elements are matched by key: removals (from
// the end), additions (in order), then the elements both have, at their
// positions in b.
func (d differ) keyed(a, b []any, ka, kb []string, path string, elem strategicpatch.LookupPatchMeta) {
	inB := make(map[string]int, len(kb))
	for i, k := range kb {
		inB[k] = i
	}
	inA := make(map[string]int, len(ka))
	for i, k := range ka {
		inA[k] = i
	}
	for i := len(a) - 1; i >= 0; i-- {
		if _, ok := inB[ka[i]]; !ok {
			d.add(Change{Op: "remove", Path: path + "/" + strconv.Itoa(i), From: a[i]})
		}
	}
	for j, k := range kb {
		if _, ok := inA[k]; !ok {
			d.add(Change{Op: "add", Path: path + "/" + strconv.Itoa(j), To: b[j]})
		}
	}
	for j, k := range kb {
		if i, ok := inA[k]; ok {
			d.values(a[i], b[j], path+"/"+strconv.Itoa(j), elem)
		}
	}
}

// keysOf returns each element's key: the JSON text of its field key. ok
// is false when there is no key, or an element lacks it, or two share it.
func keysOf(l []any, key string) ([]string, bool) {
	if key == "" {
		return nil, false
	}
	out := make([]string, len(l))
	seen := make(map[string]bool, len(l))
	for i, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, false
		}
		v, ok := m[key]
		if !ok {
			return nil, false
		}
		k := keyText(v)
		if seen[k] {
			return nil, false
		}
		seen[k], out[i] = true, k
	}
	return out, true
}

func keyText(v any) string {
	if n, ok := number(v); ok {
		return strconv.FormatFloat(n, 'g', -1, 64)
	}
	if s, ok := v.(string); ok {
		return "s:" + s
	}
	return "?" + strings.TrimSpace(reflect.TypeOf(v).String())
}

// sameOrder reports whether the keys both lists have come in the same
// order in each: a keyed diff can then be applied as a patch. A reordered
// list is compared by position instead.
func sameOrder(a, b []string) bool {
	inB := make(map[string]int, len(b))
	for i, k := range b {
		inB[k] = i
	}
	last := -1
	for _, k := range a {
		if j, ok := inB[k]; ok {
			if j < last {
				return false
			}
			last = j
		}
	}
	return true
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

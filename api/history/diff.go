package history

import (
	"fmt"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/options-record/options-record/api/history/diff"
)

// DiffOptions say what Diff compares.
type DiffOptions = diff.Options

// DiffIgnored lists the fields Diff leaves out, as JSON pointers.
func DiffIgnored(o DiffOptions) []string { return diff.Ignored(o) }

// Diff returns the changes that turn the object from into the object to,
// as JSON pointers, lists matched by the apiserver's own keys where it has
// them (package diff, the one diff of both front doors and the plugin).
func Diff(from, to map[string]any, o DiffOptions) []DiffChange {
	cs := diff.Diff(from, to, o)
	if cs == nil {
		return nil
	}
	out := make([]DiffChange, len(cs))
	for i, c := range cs {
		out[i] = DiffChange(c)
	}
	return out
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

package restoreapi

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore"
)

// toYAML encodes v as YAML, through JSON, as kubectl does, but so that every
// string reads back as it was. sigs.k8s.io/yaml parses the JSON text as YAML
// 1.1, where U+0085 (NEL) breaks lines: raw in a JSON string, it is folded
// into a space (the value changes) or, followed by "---", ends the document
// (the encoding fails); and DEL, the C1 controls and U+FFFE/U+FFFF may not
// appear raw at all (the encoding fails). encoding/json leaves them raw;
// written as \u escapes, the YAML emitter keeps them (escaped in double
// quotes) and decoders give them back.
func toYAML(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode as JSON: %w", err)
	}
	return jsonToYAML(data)
}

func jsonToYAML(data []byte) ([]byte, error) {
	out, err := yaml.JSONToYAML(escapeForYAML(data))
	if err != nil {
		return nil, fmt.Errorf("encode as YAML: %w", err)
	}
	return out, nil
}

// escapeForYAML writes the characters YAML 1.1 does not take raw as JSON
// \u escapes. They can only occur inside strings (JSON's structure is
// ASCII), where the escape means the same character.
func escapeForYAML(data []byte) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0xfffe || r == 0xffff {
			if out == nil {
				out = make([]byte, 0, len(data)+16)
			}
			out = append(out, data[last:i]...)
			out = fmt.Appendf(out, `\u%04x`, r)
			last = i + n
		}
		i += n
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}

// manifestHeader is the report of a YAML manifest, as comment lines. Every
// recorded value in it was written by some cluster user (an ownerReference
// name may hold a newline followed by a whole ClusterRoleBinding), and the
// manifest is made to be piped into kubectl apply: each value is quoted
// with every control and non-ASCII character escaped, so that no value can
// end its comment line, whatever YAML version reads it (YAML 1.1 also
// breaks lines at U+0085, U+2028 and U+2029).
func manifestHeader(v *history.Version, dropped []restore.DroppedOwner) []byte {
	q := strconv.QuoteToASCII
	by := "(baseline)"
	if v.Actor != nil {
		by = v.Actor.Username
	}
	var hdr strings.Builder
	fmt.Fprintf(&hdr, "# %s %s/%s, version %s (%s by %s at %s)\n", q(v.Kind), q(v.Namespace), q(v.Name), q(v.ID), q(v.Verb),
		q(by), v.ChangedAt.UTC().Format("2006-01-02T15:04:05Z"))
	for _, d := range dropped {
		fmt.Fprintf(&hdr, "# ownerReference %s %s (uid %s) dropped: %s\n", q(d.Kind), q(d.Name), q(d.UID), q(d.Reason))
	}
	return []byte(hdr.String())
}

package manifest

import (
	"fmt"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// JSONToYAML encodes a JSON document as YAML, as kubectl does, but so that
// every string reads back as it was. sigs.k8s.io/yaml parses the JSON text
// as YAML 1.1, where U+0085 (NEL) breaks lines: raw in a JSON string, it is
// folded into a space (the value changes) or, followed by "---", ends the
// document (the encoding fails); and DEL, the C1 controls and U+FFFE/U+FFFF
// may not appear raw at all (the encoding fails). encoding/json leaves them
// raw; written as \u escapes, the YAML emitter keeps them (escaped in
// double quotes) and decoders give them back.
func JSONToYAML(data []byte) ([]byte, error) {
	return yaml.JSONToYAML(escapeForYAML(data))
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

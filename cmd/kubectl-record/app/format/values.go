package format

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/options-record/options-record/api/escape"
	record "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/api/restore/manifest"
)

// ValueLines renders a value as YAML lines (a scalar as its JSON text),
// each escaped.
func ValueLines(v any) []string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // text for a terminal or a page's textContent: < stays <
	if err := enc.Encode(v); err != nil {
		return []string{Cell(fmt.Sprint(v))}
	}
	data := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	switch v.(type) {
	case map[string]any, []any:
		y, err := manifest.JSONToYAML(data)
		if err == nil {
			data = y
		}
	}
	var out []string
	for _, l := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		out = append(out, escape.Line(l))
	}
	return out
}

// DescribeRestore writes what a restore did or would do.
func DescribeRestore(w io.Writer, s *record.RestoreStatus) {
	fmt.Fprintf(w, "  phase: %s, action: %s\n", s.Phase, CellOrNone(s.Action))
	if s.Message != "" {
		fmt.Fprintf(w, "  %s\n", Cell(s.Message))
	}
	for _, ch := range s.Changes {
		fmt.Fprintf(w, "  %-7s %s%s\n", ch.Op, Cell(ch.Path), changeValues(ch))
	}
	for _, d := range s.DroppedOwnerReferences {
		fmt.Fprintf(w, "  dropped ownerReference %s %s: %s\n", Cell(d.Kind), Cell(d.Name), Cell(d.Reason))
	}
}

// changeValues shows a change's values, compact, on one line.
func changeValues(ch record.FieldChange) string {
	v := func(raw []byte) string {
		var x any
		if json.Unmarshal(raw, &x) != nil {
			return Cell(string(raw))
		}
		b, _ := json.Marshal(x)
		s := string(b)
		if len(s) > 80 {
			s = s[:80] + "…"
		}
		return Cell(s)
	}
	switch {
	case ch.From != nil && ch.To != nil:
		return ": " + v(ch.From.Raw) + " → " + v(ch.To.Raw)
	case ch.To != nil:
		return ": " + v(ch.To.Raw)
	case ch.From != nil:
		return " (was " + v(ch.From.Raw) + ")"
	}
	return ""
}

// StepLine is the outcome of one step of an executed plan, on one line.
func StepLine(s record.StepResult) string {
	obj := ResourceCell(s.Object) + " " + Cell(s.Object.Name)
	if s.Object.Namespace != "" {
		obj = ResourceCell(s.Object) + " " + Cell(s.Object.Namespace) + "/" + Cell(s.Object.Name)
	}
	line := fmt.Sprintf("%d. %s %s: %s", s.Index, s.Action, obj, CellOrNone(s.Result))
	if s.Message != "" {
		line += " (" + Cell(s.Message) + ")"
	}
	return line
}

package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"

	record "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/api/restore/manifest"
)

// output is -o: a table (the default, or wide) or one of kubectl's
// printers (yaml, json, name, jsonpath=..., go-template=...).
type output struct {
	flags *genericclioptions.PrintFlags
}

func newOutput(cmd *cobra.Command) *output {
	o := &output{flags: genericclioptions.NewPrintFlags("").WithTypeSetter(served)}
	o.flags.AddFlags(cmd)
	// kubectl's -o help, with the table formats this plugin adds.
	f := cmd.Flags().Lookup("output")
	f.Usage = "Output format: table (default), wide, " + strings.Join(o.flags.AllowedFormats(), ", ") + "."
	return o
}

// table reports whether -o asks for a table, and a wide one.
func (o *output) table() (bool, bool) {
	switch *o.flags.OutputFormat {
	case "", "table":
		return true, false
	case "wide":
		return true, true
	}
	return false, false
}

// served knows the record's types in the served version only, so that
// what is printed names record.optionsrecord.io/v1alpha1.
var served = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := record.AddServedToScheme(s); err != nil {
		panic(err) // static registrations
	}
	return s
}()

// print writes obj with the printer -o names. A list is printed as kubectl
// get prints one, a v1 List of typed items, which every printer takes
// (name included).
//
// Recorded strings may hold characters that drive or mislead a terminal
// (C1 controls such as U+009B, a CSI; direction overrides; zero-width
// and other invisible characters). -o json always writes them as JSON
// \u escapes, which every JSON reader reads as the same characters. On a
// terminal, every other format (yaml, jsonpath, go-template) shows them as
// Go escapes, as the tables do, and -o yaml says so in a first comment
// line; written to a pipe or a file, those formats carry them as recorded.
func (o *output) print(w io.Writer, obj runtime.Object) error {
	var buf bytes.Buffer
	if err := o.printRaw(&buf, obj); err != nil {
		return err
	}
	out := buf.Bytes()
	switch format := *o.flags.OutputFormat; {
	case format == "json":
		out = escapeJSON(out)
	case isTerminal(w):
		if shown := escapeTerminal(out); !bytes.Equal(shown, out) {
			out = shown
			if format == "yaml" {
				out = append([]byte(yamlTerminalNote), out...)
			}
		}
	}
	_, err := w.Write(out)
	return err
}

// yamlTerminalNote heads -o yaml on a terminal when a string was escaped.
const yamlTerminalNote = "# On this terminal, invisible, direction and control characters are shown as \\u escapes:\n" +
	"# redirect the output (> file, | kubectl apply -f -) to get every string as recorded.\n"

// isTerminal reports whether w is a terminal (a variable: tests set it).
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// shownRaw tells whether r may reach a terminal as itself: printable
// characters, space, and the tab and newline that lay out the output.
func shownRaw(r rune) bool {
	if r == '\n' || r == '\t' || r == ' ' {
		return true
	}
	return unicode.IsGraphic(r) && !(r >= 0x202a && r <= 0x202e) && !(r >= 0x2066 && r <= 0x2069)
}

// escapeTerminal writes every rune of out that is not shownRaw as a Go
// escape (\u202e, \x1b).
func escapeTerminal(out []byte) []byte {
	var b []byte
	for i, r := range string(out) {
		if shownRaw(r) && r != utf8.RuneError {
			if b != nil {
				b = utf8.AppendRune(b, r)
			}
			continue
		}
		if b == nil {
			b = append(make([]byte, 0, len(out)+16), out[:i]...)
		}
		q := strconv.QuoteRuneToASCII(r)
		b = append(b, q[1:len(q)-1]...)
	}
	if b == nil {
		return out
	}
	return b
}

// escapeJSON writes every non-ASCII rune of a JSON text that is not
// shownRaw as a JSON \u escape (a surrogate pair beyond U+FFFF). Such
// runes occur only inside strings (JSON's structure is ASCII), where the
// escape is the same character; C0 controls are escaped already.
func escapeJSON(out []byte) []byte {
	var b []byte
	for i, r := range string(out) {
		if r < 0x7f || shownRaw(r) {
			if b != nil {
				b = utf8.AppendRune(b, r)
			}
			continue
		}
		if b == nil {
			b = append(make([]byte, 0, len(out)+16), out[:i]...)
		}
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			b = fmt.Appendf(b, `\u%04x\u%04x`, r1, r2)
		} else {
			b = fmt.Appendf(b, `\u%04x`, r)
		}
	}
	if b == nil {
		return out
	}
	return b
}

// printRaw writes obj with the printer -o names.
func (o *output) printRaw(w io.Writer, obj runtime.Object) error {
	p, err := o.flags.ToPrinter()
	if err != nil {
		return usageError{err}
	}
	if *o.flags.OutputFormat == "yaml" {
		return printYAML(w, obj)
	}
	if meta.IsListType(obj) {
		items, err := meta.ExtractList(obj)
		if err != nil {
			return err
		}
		list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}}}
		for _, it := range items {
			gvks, _, err := served.ObjectKinds(it)
			if err != nil {
				return err
			}
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(it)
			if err != nil {
				return err
			}
			item := unstructured.Unstructured{Object: u}
			item.SetGroupVersionKind(gvks[0])
			list.Items = append(list.Items, item)
		}
		obj = list
	}
	return p.PrintObj(obj, w)
}

// printYAML writes obj as -o yaml, typed as the record serves it, with the
// record's YAML encoding: recorded strings may hold characters YAML does
// not take raw (C0 and C1 controls, NEL), on which kubectl's YAML printer
// fails or which it folds (manifest.JSONToYAML).
func printYAML(w io.Writer, obj runtime.Object) error {
	typed := func(o runtime.Object) (map[string]any, error) {
		gvks, _, err := served.ObjectKinds(o)
		if err != nil {
			return nil, err
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, err
		}
		item := unstructured.Unstructured{Object: u}
		item.SetGroupVersionKind(gvks[0])
		return item.Object, nil
	}
	var doc any
	if meta.IsListType(obj) {
		items, err := meta.ExtractList(obj)
		if err != nil {
			return err
		}
		list := make([]any, 0, len(items))
		for _, it := range items {
			u, err := typed(it)
			if err != nil {
				return err
			}
			list = append(list, u)
		}
		doc = map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}, "items": list}
	} else {
		u, err := typed(obj)
		if err != nil {
			return err
		}
		doc = u
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	y, err := manifest.JSONToYAML(data)
	if err != nil {
		return err
	}
	_, err = w.Write(y)
	return err
}

// column is one column of a table: Priority 1 shows only with -o wide.
type column struct {
	name     string
	priority int32
}

// printTable writes rows under the columns, as kubectl get does. Every
// cell was written by some cluster user: cell() has made it one line.
func printTable(w io.Writer, cols []column, rows []metav1.TableRow, withNamespace, wide bool) error {
	t := &metav1.Table{Rows: rows}
	for _, c := range cols {
		t.ColumnDefinitions = append(t.ColumnDefinitions, metav1.TableColumnDefinition{Name: c.name, Type: "string", Priority: c.priority})
	}
	if len(rows) == 0 {
		return nil
	}
	return printers.NewTablePrinter(printers.PrintOptions{WithNamespace: withNamespace, Wide: wide}).PrintObj(t, w)
}

// cell makes a recorded string safe for one cell of a terminal table: as
// is when every character is printable, else quoted with Go escapes
// (control characters, tabs and newlines, bidirectional overrides).
func cell(s string) string {
	for _, r := range s {
		if !unicode.IsGraphic(r) || r == '\t' || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			return strconv.QuoteToGraphic(s)
		}
	}
	if s == "" {
		return "<none>"
	}
	return s
}

// now is the clock of age (fixed in tests).
var now = time.Now

// escapeText makes text safe for a terminal line by line: every rune that
// is not graphic (control characters, C1 controls such as U+009B, the
// terminal's CSI, bidirectional overrides, zero-width characters) is
// written as a Go escape; the rest stays as it is, unquoted.
func escapeText(s string) string {
	clean := true
	for _, r := range s {
		if r != ' ' && !unicode.IsGraphic(r) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if r != ' ' && !unicode.IsGraphic(r) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// age is how long ago t was, as kubectl shows it.
func age(t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now().Sub(t))
}

// short shortens a long identifier (a uid) for a table.
func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// actorCell is who did it: the user, and the identity they acted as.
func actorCell(user, as string) string {
	if as == "" {
		return cell(user)
	}
	return fmt.Sprintf("%s (as %s)", cell(user), cell(as))
}

package cmdutil

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/options-record/options-record/api/escape"
	record "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/api/restore/manifest"
)

// PrintFlags are -o: a table (the default, or wide) or one of kubectl's
// printers (yaml, json, name, jsonpath=..., go-template=...).
type PrintFlags struct {
	flags *genericclioptions.PrintFlags
}

// NewPrintFlags adds -o to cmd.
func NewPrintFlags(cmd *cobra.Command) *PrintFlags {
	o := &PrintFlags{flags: genericclioptions.NewPrintFlags("").WithTypeSetter(served)}
	o.flags.AddFlags(cmd)
	// kubectl's -o help, with the table formats this plugin adds.
	f := cmd.Flags().Lookup("output")
	f.Usage = "Output format: table (default), wide, " + strings.Join(o.flags.AllowedFormats(), ", ") + "."
	return o
}

// Table reports whether -o asks for a table, and a wide one.
func (o *PrintFlags) Table() (bool, bool) {
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

// Print writes obj with the printer -o names. A list is printed as kubectl
// get prints one, a v1 List of typed items, which every printer takes
// (name included).
//
// Recorded strings may hold characters that drive or mislead a terminal
// (C1 controls such as U+009B, a CSI; direction overrides; zero-width
// and other invisible characters: escape.Hidden). -o json always writes
// them as JSON \u escapes, which every JSON reader reads as the same characters. On a
// terminal, every other format (yaml, jsonpath, go-template) shows them as
// Go escapes, as the tables do, and -o yaml says so in a first comment
// line; written to a pipe or a file, those formats carry them as recorded.
func (o *PrintFlags) Print(w io.Writer, obj runtime.Object) error {
	var buf bytes.Buffer
	if err := o.printRaw(&buf, obj); err != nil {
		return err
	}
	out := buf.Bytes()
	switch format := *o.flags.OutputFormat; {
	case format == "json":
		out = escape.JSON(out)
	case isTerminal(w):
		if shown := escape.Text(out); !bytes.Equal(shown, out) {
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

// printRaw writes obj with the printer -o names.
func (o *PrintFlags) printRaw(w io.Writer, obj runtime.Object) error {
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

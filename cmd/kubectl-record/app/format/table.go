package format

import (
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"
)

// Columns are a table's columns: names, then those only -o wide shows.
func Columns(names, wide []string) []metav1.TableColumnDefinition {
	var cols []metav1.TableColumnDefinition
	for _, n := range names {
		cols = append(cols, metav1.TableColumnDefinition{Name: n, Type: "string"})
	}
	for _, n := range wide {
		cols = append(cols, metav1.TableColumnDefinition{Name: n, Type: "string", Priority: 1})
	}
	return cols
}

// PrintTable writes rows under the columns, as kubectl get does. Every
// cell was written by some cluster user: Cell has made it one line.
func PrintTable(w io.Writer, cols []metav1.TableColumnDefinition, rows []metav1.TableRow, withNamespace, wide bool) error {
	if len(rows) == 0 {
		return nil
	}
	t := &metav1.Table{ColumnDefinitions: cols, Rows: rows}
	return printers.NewTablePrinter(printers.PrintOptions{WithNamespace: withNamespace, Wide: wide}).PrintObj(t, w)
}

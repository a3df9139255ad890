package history

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	record "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmdutil"
	"github.com/options-record/options-record/cmd/kubectl-record/app/format"
)

type options struct {
	*cmdutil.Factory
	out      *cmdutil.PrintFlags
	window   cmdutil.Window
	proofDir string
}

// NewCmdHistory returns kubectl record history.
func NewCmdHistory(f *cmdutil.Factory) *cobra.Command {
	h := &options{Factory: f}
	cmd := &cobra.Command{
		Use:   "history TYPE/NAME",
		Short: "Every recorded version of an object, across re-creations",
		Long: `List every recorded change of the object, newest first: when, the verb, who
made it (and whom they acted as; the garbage collector and the namespace
controller as <garbage-collector> and <namespace-controller>, a user name
that begins with < quoted), and the version's short name, which diff
(--from, --to), manifest and restore take with --version (-o wide adds the
full user name and the long name, which they take too). An object deleted
and created again under the same name shows each incarnation (a new UID).

With --proof DIR, it also writes into DIR, for each version listed, its
inclusion proof in the record's tamper-evident log (a C2SP tlog-proof named
after the version's short name, SHORT-NAME.tlog-proof), which an auditor
checks offline with the log's public key alone:
options-record verify --log-verifier-key-file log.pub --proof FILE
(docs/security.md). DIR is created and checked as export's -o DIR is
(0700, yours, no symbolic link); files are written 0600, never over a file.
A version not in the log yet (it is appended within seconds) is listed and
the command exits 1; a version stored before the record kept its log never
will be in it: it is listed and does not change the exit code; a record
without a log writes nothing and says so.`,
		Example: `  kubectl record history cm/app-config -n shop
  kubectl record history deploy web -n shop --since 24h -o wide
  kubectl record history clusterrole/view -o yaml
  kubectl record history cm/app-config -n shop --proof proofs/`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: f.CompleteObjects,
		RunE:              func(cmd *cobra.Command, args []string) error { return h.run(cmd, args) },
	}
	h.out = cmdutil.NewPrintFlags(cmd)
	h.window.AddFlags(cmd)
	cmd.Flags().StringVar(&h.proofDir, "proof", "", "Also write each listed version's inclusion proof (SHORT-NAME"+cmdutil.ProofSuffix+") into this directory")
	return cmd
}

func (h *options) run(cmd *cobra.Command, args []string) error {
	t, err := h.Target(args, true)
	if err != nil {
		return err
	}
	extra, err := h.window.Selectors()
	if err != nil {
		return err
	}
	list, recs, metas, err := h.Versions(cmd.Context(), t, extra, h.window.Limit)
	if err != nil {
		return err
	}
	table, wide := h.out.Table()
	if !table {
		if err := h.out.Print(h.Streams.Out, list); err != nil {
			return err
		}
	} else {
		if len(recs) == 0 {
			return cmdutil.WithExitCode(cmdutil.ExitNotFound, fmt.Errorf("no recorded change of %s/%s (that you may see)", t.Resource, t.Name))
		}
		if err := format.PrintTable(h.Streams.Out, columns, tableRows(recs, metas), false, wide); err != nil {
			return err
		}
	}
	if h.proofDir == "" {
		return nil
	}
	ns := ""
	if t.Namespaced {
		if ns, err = h.Namespace(); err != nil {
			return err
		}
	}
	return h.writeProofs(cmd.Context(), ns, recs, metas)
}

// writeProofs writes the proof of each version into the --proof
// directory, SHORT-NAME.tlog-proof, and says what it wrote on stderr (the
// list on stdout stays as -o asked). The first proof is asked before the
// directory is made: a record without a log makes none.
func (h *options) writeProofs(ctx context.Context, ns string, recs []record.ChangeRecord, metas []metav1.ObjectMeta) error {
	var root *os.Root
	defer func() {
		if root != nil {
			root.Close()
		}
	}()
	var written, missing, before int
	for i := range recs {
		long := metas[i].Name
		short := cmdutil.ShortName(&recs[i], long)
		proof, err := h.Proof(ctx, ns, long)
		if errors.Is(err, cmdutil.ErrBeforeLog) {
			// Never in the log: said, and not an error.
			fmt.Fprintf(h.Streams.ErrOut, "no proof of %s: %s\n", format.Cell(short), err)
			before++
			continue
		}
		if errors.Is(err, cmdutil.ErrNotLogged) {
			fmt.Fprintf(h.Streams.ErrOut, "no proof of %s: %s\n", format.Cell(short), err)
			missing++
			continue
		}
		if err != nil {
			return err
		}
		if root == nil {
			if root, err = cmdutil.OpenPrivateDir(h.proofDir); err != nil {
				return err
			}
		}
		file := proofFile(short, long)
		if err := cmdutil.WriteNewFile(root, file, proof); err != nil {
			return fmt.Errorf("the proof of %s: %w", format.Cell(short), err)
		}
		fmt.Fprintf(h.Streams.ErrOut, "wrote %s\n", format.Cell(filepath.Join(h.proofDir, file)))
		written++
	}
	if written > 0 {
		fmt.Fprintf(h.Streams.ErrOut, "Wrote %d proofs into %s; check them offline with: options-record verify --log-verifier-key-file log.pub --proof FILE\n",
			written, format.Cell(h.proofDir))
	}
	if before > 0 {
		fmt.Fprintf(h.Streams.ErrOut, "%d versions were stored before the record kept its tamper-evident log: it holds no proof of them\n", before)
	}
	if missing > 0 {
		return fmt.Errorf("%d versions are not in the tamper-evident log yet (it appends them within seconds): try again", missing)
	}
	return nil
}

// proofFile names a version's proof file: its short name, safe in a
// file name (the object's name is a cluster user's, cmdutil.FileSafe);
// one too long for a file name is its long name's end instead, which the
// version key makes unique. A leading "." is encoded: no hidden file.
func proofFile(short, long string) string {
	room := cmdutil.MaxFileName - len(cmdutil.ProofSuffix)
	name := cmdutil.FileSafe(short)
	if len(name) > room {
		name = cmdutil.FileSafe(long)
		if len(name) > room {
			// The version key (64 hex digits) ends the long name.
			name = name[len(name)-room:]
			for len(name) > 0 && (!utf8.RuneStart(name[0]) || name[0] == '.') {
				name = name[1:]
			}
		}
	}
	if strings.HasPrefix(name, ".") {
		name = "%2E" + name[1:] // not hidden, never "." or ".."
	}
	return name + cmdutil.ProofSuffix
}

// columns are the table's columns; the wide ones come last. BY names the
// garbage collector and the namespace controller by their words
// (format.DeleterCell, the rule of the deletions' tables), so that a
// cascade's delete fits 120 columns; -o wide adds USER, the full name.
var columns = format.Columns([]string{"CHANGED", "VERB", "BY", "UID", "RESTORABLE", "VERSION"},
	[]string{"RESOURCE-VERSION", "SUBRESOURCE", "INITIATED-BY", "USER", "USER-AGENT", "LONG-NAME"})

// tableRows are the table's rows, one a recorded version.
func tableRows(recs []record.ChangeRecord, metas []metav1.ObjectMeta) []metav1.TableRow {
	var rows []metav1.TableRow
	for i, r := range recs {
		by, user, agent := "<baseline>", "", ""
		if r.Actor != nil {
			by, user, agent = format.DeleterCell(r.Actor.Username, r.Actor.ImpersonatedUser), format.ActorCell(r.Actor.Username, r.Actor.ImpersonatedUser), format.Cell(r.Actor.UserAgent)
		}
		verb := r.Verb
		if r.Subresource != "" {
			verb += "/" + format.Cell(r.Subresource)
		}
		initiated := ""
		if r.InitiatedVia != "" {
			initiated = format.Cell(r.InitiatedBy) + " (" + r.InitiatedVia + ")"
		}
		rows = append(rows, metav1.TableRow{Cells: []any{format.Age(r.ChangedAt.Time), verb, by, format.Short(r.Object.UID, 8),
			fmt.Sprint(r.Restorable), cmdutil.ShortName(&recs[i], metas[i].Name), format.CellOrNone(format.Cell(r.ResourceVersion)), format.CellOrNone(format.Cell(r.Subresource)),
			format.CellOrNone(initiated), format.CellOrNone(user), format.CellOrNone(agent), format.Cell(metas[i].Name)}})
	}
	return rows
}

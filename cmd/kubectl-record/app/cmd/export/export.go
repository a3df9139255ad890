package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	record "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/api/restore/manifest"
	"github.com/options-record/options-record/api/tlogproof"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmdutil"
	"github.com/options-record/options-record/cmd/kubectl-record/app/format"
)

type options struct {
	*cmdutil.Factory
	asOf      string
	dir       string
	resources []string
	proofs    bool            // --with-proofs
	written   map[string]bool // the file names written, case-folded
	root      *os.Root        // DIR, opened once checked
}

// NewCmdExport returns kubectl record export.
func NewCmdExport(f *cmdutil.Factory) *cobra.Command {
	e := &options{Factory: f}
	cmd := &cobra.Command{
		Use:   "export -n NAMESPACE -o DIR",
		Short: "Write the namespace as it was at a time: one clean manifest per object",
		Long: `Write every recorded object of the namespace as it was at a time (default:
now) into DIR, one clean YAML manifest per object (status, uid,
resourceVersion, managedFields... removed; ownerReferences to owners that are
gone dropped), that kubectl apply -f DIR accepts: the file backup operators
know, served from the record. Only objects you may read are written; objects
whose state the record cannot restore (Secret values recorded as digests, no
full state) are listed and skipped. DIR is created if needed (0700), and
refused when it is a symbolic link (with or without a trailing slash), another
user's, or writable by others, or when a link on the way to it is neither yours
nor root's;
files are written 0600 (Secrets may be recorded in clear) and never over an
existing file. An object whose file cannot be written is listed and skipped,
and the export then exits 1.

With --with-proofs, each manifest X.yaml gets beside it its version's
inclusion proof in the record's tamper-evident log, X.tlog-proof (a C2SP
tlog-proof), and X.json, the exact stored state the proof covers. The proof
covers X.json, not X.yaml: the manifest is derived from that state (cleaned
as above). An auditor checks both offline with the log's public key alone:
options-record verify --log-verifier-key-file log.pub --proof X.tlog-proof
fails when X.tlog-proof or X.json is not the logged one (docs/security.md).
A version stored before the record kept its log gets its manifest and no
proof (a line on stderr; the exit code is not changed). A version not in the
log yet (it is appended within seconds) is listed and the export exits 1; a
record without a log stops the export before it writes anything.`,
		Example: `  kubectl record export -n shop -o shop-now/
  kubectl record export -n shop --as-of 2026-11-25T09:00:00Z -o shop-before-the-outage/
  kubectl apply --dry-run=server -f shop-before-the-outage/
  kubectl record export -n shop --with-proofs -o shop-evidence/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return e.run(cmd.Context()) },
	}
	cmd.Flags().StringVar(&e.asOf, "as-of", "", "The time (RFC 3339, or 2h for two hours ago); default: now")
	cmd.Flags().StringVarP(&e.dir, "output", "o", "", "The directory to write into (required)")
	cmd.Flags().StringSliceVar(&e.resources, "resources", nil, "Only these types (cm, deployments.apps...), comma-separated")
	cmd.Flags().BoolVar(&e.proofs, "with-proofs", false, "Write beside each manifest its inclusion proof in the tamper-evident log (X"+cmdutil.ProofSuffix+") and the logged state it covers (X.json)")
	return cmd
}

func (e *options) run(ctx context.Context) error {
	if e.dir == "" {
		return cmdutil.Usage(errors.New("-o DIR is required: the directory to write the manifests into"))
	}
	at := format.Now()
	if e.asOf != "" {
		var err error
		if at, err = cmdutil.ParseTime(e.asOf); err != nil {
			return err
		}
	}
	ns, err := e.Namespace()
	if err != nil {
		return err
	}
	var only []*cmdutil.Target
	for _, r := range e.resources {
		gr, namespaced, err := e.Resolve(r)
		if err != nil {
			return err
		}
		if !namespaced {
			return cmdutil.Usagef("%s is cluster-scoped: export writes a namespace's objects", gr)
		}
		only = append(only, &cmdutil.Target{Resource: gr, Namespaced: true})
	}
	if len(only) == 0 {
		only = []*cmdutil.Target{nil}
	}
	rc, err := e.Record()
	if err != nil {
		return err
	}
	if e.root, err = cmdutil.OpenPrivateDir(e.dir); err != nil {
		return err
	}
	defer e.root.Close()
	var written, skipped, failed int
	for _, t := range only {
		opts := metav1.ListOptions{FieldSelector: t.Selector(cmdutil.Field("asOf", at.UTC().Format(time.RFC3339Nano))), Limit: 100}
		for {
			page, err := rc.Changes(ns).List(ctx, opts)
			if err != nil {
				return cmdutil.Explain(err, "list the objects of namespace "+ns+" as of "+at.UTC().Format(time.RFC3339))
			}
			for _, c := range page.Items {
				file, err := e.write(ctx, ns, &c)
				var fe *fileError
				switch {
				case errors.As(err, &fe):
					fmt.Fprintf(e.Streams.ErrOut, "not written %s: %s\n", fe.what, format.Cell(fe.Error()))
					failed++
					continue
				case err != nil:
					return err
				}
				if file == "" {
					skipped++
					continue
				}
				written++
			}
			if page.Continue == "" {
				break
			}
			opts.Continue = page.Continue
		}
	}
	fmt.Fprintf(e.Streams.Out, "Exported %d objects of namespace %s as of %s into %s", written, format.Cell(ns), at.UTC().Format(time.RFC3339), format.Cell(e.dir))
	if skipped > 0 {
		fmt.Fprintf(e.Streams.Out, " (%d skipped: see above)", skipped)
	}
	fmt.Fprintln(e.Streams.Out)
	if failed > 0 {
		return fmt.Errorf("%d objects could not be written into %s: see above", failed, format.Cell(e.dir))
	}
	return nil
}

// fileError is an object whose file could not be written: it is listed,
// the export goes on, and exits 1 at its end.
type fileError struct {
	what string
	err  error
}

func (e *fileError) Error() string { return e.err.Error() }
func (e *fileError) Unwrap() error { return e.err }

// write writes one object's manifest as of its version; "" when skipped.
func (e *options) write(ctx context.Context, ns string, c *record.Change) (string, error) {
	what := format.ResourceCell(c.Object) + "/" + format.Cell(c.Object.Name)
	if !c.Restorable {
		fmt.Fprintf(e.Streams.ErrOut, "skipped %s: the record holds no restorable state of it (Secret values as digests, or no full state)\n", what)
		return "", nil
	}
	rc, err := e.Record()
	if err != nil {
		return "", err
	}
	full, err := rc.Changes(ns).Get(ctx, c.Name, metav1.GetOptions{})
	if err != nil {
		return "", cmdutil.Explain(err, "get version "+c.Name+" in namespace "+ns)
	}
	var proof []byte
	if e.proofs {
		// Asked first: a record without a log stops the export before
		// its first file; a version not in the log yet is not written.
		proof, err = e.Proof(ctx, ns, c.Name)
		switch {
		case errors.Is(err, cmdutil.ErrBeforeLog):
			// Never in the log: the manifest, without a proof.
			fmt.Fprintf(e.Streams.ErrOut, "no proof of %s: %s\n", what, err)
		case errors.Is(err, cmdutil.ErrNotLogged):
			return "", &fileError{what, err}
		case err != nil:
			return "", err
		}
	}
	var state []byte
	if proof != nil {
		// The exact logged state the proof carries (the manifest is
		// derived from it), which verify --proof compares.
		if state, err = tlogproof.State(proof); err != nil {
			return "", fmt.Errorf("%s: the record's proof: %w", what, err)
		}
	}
	if full.Manifest == nil || len(full.Manifest.Raw) == 0 {
		fmt.Fprintf(e.Streams.ErrOut, "skipped %s: no manifest\n", what)
		return "", nil
	}
	var obj map[string]any
	if err := json.Unmarshal(full.Manifest.Raw, &obj); err != nil {
		return "", fmt.Errorf("%s: the manifest is not an object: %w", what, err)
	}
	if err := manifest.CheckSingleObject(obj, manifest.Identity{Group: full.Object.APIGroup, Kind: full.Object.Kind,
		Namespace: full.Object.Namespace, Name: full.Object.Name}); err != nil {
		fmt.Fprintf(e.Streams.ErrOut, "skipped %s: %s\n", what, format.Cell(err.Error()))
		return "", nil
	}
	name, err := manifestFile(full.Object)
	if err != nil {
		fmt.Fprintf(e.Streams.ErrOut, "skipped %s: %s\n", what, format.Cell(err.Error()))
		return "", nil
	}
	y, err := manifest.JSONToYAML(full.Manifest.Raw)
	if err != nil {
		return "", err
	}
	file := e.claim(name, full.Object.UID)
	if proof != nil {
		// Beside the manifest, named as it is (claim made the name
		// unique): verify --proof X.tlog-proof.
		base := cmdutil.CutFileName(strings.TrimSuffix(file, ".yaml"), cmdutil.MaxFileName-len(cmdutil.ProofSuffix))
		if err := cmdutil.WriteNewFile(e.root, base+cmdutil.ProofSuffix, proof); err != nil {
			return "", &fileError{what, err}
		}
		if state != nil {
			if err := cmdutil.WriteNewFile(e.root, base+".json", state); err != nil {
				return "", &fileError{what, err}
			}
		}
	}
	// O_EXCL: never over a file, never through a link.
	if err := cmdutil.WriteNewFile(e.root, file, y); err != nil {
		return "", &fileError{what, err}
	}
	return filepath.Join(e.dir, file), nil
}

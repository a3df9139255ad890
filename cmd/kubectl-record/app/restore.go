package app

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	record "github.com/options-record/options-record/api/record/v1alpha1"
)

type restoreOptions struct {
	*options
	at    string // --version
	yes   bool
	force bool
}

func newRestoreCommand(o *options) *cobra.Command {
	r := &restoreOptions{options: o}
	cmd := &cobra.Command{
		Use:   "restore TYPE/NAME",
		Short: "Put a recorded version back, as you, after a dry run",
		Long: `Restore the object to a recorded version (the newest the record can restore,
which for a deleted object is its last state, or --version). The restore runs
first as a server-side dry run: what it would do (create or update) and what it
would change in the live object are shown, and you are asked to confirm. Then it
runs for real, as you, restoring the recorded state the dry run showed (pinned by
its digest: if the record was changed in between, nothing is written): your RBAC
decides the write, and the cluster's audit log names you. Without a terminal it refuses unless --yes is given.

If the live object changed since the record's newest version, the restore is
refused (nothing is written): review with kubectl record history, then pass
--force to overwrite.`,
		Example: `  kubectl record restore cm/app-config -n shop
  kubectl record restore deploy/web -n shop --version 5e0c…9f1a.8c3b…e201 --yes`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: o.completeObjects,
		RunE:              func(cmd *cobra.Command, args []string) error { return r.run(cmd, args) },
	}
	cmd.Flags().StringVar(&r.at, "version", "", "The version (from kubectl record history); default: the newest the record can restore")
	cmd.Flags().BoolVarP(&r.yes, "yes", "y", false, "Restore without asking (after the dry run is shown)")
	cmd.Flags().BoolVar(&r.force, "force", false, "Restore even if the live object changed since the record's newest version")
	return cmd
}

func (r *restoreOptions) run(cmd *cobra.Command, args []string) error {
	ctx := cmd.Context()
	t, err := r.target(args, true)
	if err != nil {
		return err
	}
	c, version, err := r.version(ctx, t, r.at)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("%s/%s", t.resource, cell(c.Object.Name))
	if c.Object.Namespace != "" {
		what += " in namespace " + cell(c.Object.Namespace)
	}
	spec := record.RestoreSpec{Version: version, Force: r.force}
	dry, err := r.create(ctx, t, spec, true)
	if err != nil {
		return err
	}
	out := r.streams.Out
	fmt.Fprintf(out, "Dry run: restoring %s to version %s (%s by %s, %s ago)\n", what, version, c.Verb, actorOf(c), age(c.ChangedAt.Time))
	describe(out, dry)
	if dry.StateDigest != "" {
		fmt.Fprintf(out, "  recorded state: %s\n", cell(dry.StateDigest))
	}
	if dry.Phase != "Succeeded" {
		return refusal(dry, t)
	}
	if dry.Action == "none" {
		fmt.Fprintln(out, "The live object already holds that state: nothing to do.")
		return nil
	}
	if !r.yes {
		f, ok := r.streams.In.(*os.File)
		if !ok || !term.IsTerminal(int(f.Fd())) {
			return &codedError{2, fmt.Errorf("not restored: no terminal to confirm on; pass --yes to restore %s", what)}
		}
		fmt.Fprintf(out, "Restore %s for real, as you? [y/N] ", what)
		answer, _ := bufio.NewReader(r.streams.In).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			return &codedError{2, fmt.Errorf("not restored")}
		}
	}
	// What the dry run showed, or nothing: the recorded state is pinned by
	// its digest.
	spec.StateDigest = dry.StateDigest
	done, err := r.create(ctx, t, spec, false)
	if err != nil {
		return err
	}
	if done.Phase != "Succeeded" {
		describe(out, done)
		return refusal(done, t)
	}
	fmt.Fprintf(out, "Restored %s: %s, resourceVersion %s (restore %s).\n", what, done.Action, done.ResourceVersion, done.RestoreID)
	return nil
}

// create creates a Restore (or ClusterRestore) of spec and returns its
// status, as the API answered.
func (r *restoreOptions) create(ctx context.Context, t *target, spec record.RestoreSpec, dryRun bool) (*record.RestoreStatus, error) {
	rc, err := r.record()
	if err != nil {
		return nil, err
	}
	opts := metav1.CreateOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	meta := metav1.ObjectMeta{Name: restoreName(t.name)}
	if !t.namespaced {
		got, err := rc.ClusterRestores().Create(ctx, &record.ClusterRestore{ObjectMeta: meta, Spec: spec}, opts)
		if err != nil {
			return nil, explain(err, "create clusterrestores (restore "+t.resource.String()+")")
		}
		return &got.Status, nil
	}
	ns, err := r.namespace()
	if err != nil {
		return nil, err
	}
	meta.Namespace = ns
	got, err := rc.Restores(ns).Create(ctx, &record.Restore{ObjectMeta: meta, Spec: spec}, opts)
	if err != nil {
		return nil, explain(err, "create restores in namespace "+ns)
	}
	return &got.Status, nil
}

// restoreName names a Restore (or a plan) after the object, unique enough:
// names are each user's own. The name is a DNS-1123 label whatever the
// object's name or the user's is (a Role system:controller:foo, a
// ServiceAccount system:serviceaccount:ns:sa, an e-mail user): lower case,
// every run of other characters one dash, at most 40 of them kept, then 8
// random hex digits.
func restoreName(object string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	var sb strings.Builder
	dash := false
	for _, r := range strings.ToLower(object) {
		if sb.Len() >= 40 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && sb.Len() > 0 {
				sb.WriteByte('-')
			}
			sb.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	prefix := strings.Trim(sb.String(), "-")
	if prefix == "" {
		prefix = "restore"
	}
	return fmt.Sprintf("%s-%x", prefix, b)
}

// describe writes what a restore did or would do.
func describe(w io.Writer, s *record.RestoreStatus) {
	fmt.Fprintf(w, "  phase: %s, action: %s\n", s.Phase, cellOrNone(s.Action))
	if s.Message != "" {
		fmt.Fprintf(w, "  %s\n", cell(s.Message))
	}
	for _, ch := range s.Changes {
		fmt.Fprintf(w, "  %-7s %s%s\n", ch.Op, cell(ch.Path), changeValues(ch))
	}
	for _, d := range s.DroppedOwnerReferences {
		fmt.Fprintf(w, "  dropped ownerReference %s %s: %s\n", cell(d.Kind), cell(d.Name), cell(d.Reason))
	}
}

// changeValues shows a change's values, compact, on one line.
func changeValues(ch record.FieldChange) string {
	v := func(raw []byte) string {
		var x any
		if json.Unmarshal(raw, &x) != nil {
			return cell(string(raw))
		}
		b, _ := json.Marshal(x)
		s := string(b)
		if len(s) > 80 {
			s = s[:80] + "…"
		}
		return cell(s)
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

// refusal is the error of a restore that was refused or failed.
func refusal(s *record.RestoreStatus, t *target) error {
	if s.Code == 409 {
		return &codedError{5, fmt.Errorf("not restored: the live object changed since the record's newest version; review with `kubectl record history %s/%s`, then restore with --force to overwrite it", t.resource, t.name)}
	}
	return &codedError{5, fmt.Errorf("not restored (%s, %d): %s", s.Phase, s.Code, cell(s.Message))}
}

func actorOf(c *record.ChangeRecord) string {
	if c.Actor == nil {
		return "a baseline"
	}
	return actorCell(c.Actor.Username, c.Actor.ImpersonatedUser)
}

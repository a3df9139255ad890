package cmdutil

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	record "github.com/options-record/options-record/api/record/v1alpha1"

	"github.com/options-record/options-record/cmd/kubectl-record/app/format"
)

// CompleteObjects completes TYPE/NAME (or NAME after TYPE) with the names
// the record holds for that type in the namespace: objects deleted long
// ago included, which the cluster can no longer list.
func (f *Factory) CompleteObjects(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	typ, prefix, slash := "", "", false
	switch len(args) {
	case 0:
		typ, prefix, slash = strings.Cut(toComplete, "/")
		if !slash {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
		}
	case 1:
		if strings.Contains(args[0], "/") {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		typ, prefix = args[0], toComplete
	default:
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
	defer cancel()
	var out []string
	for _, n := range f.recordedNames(ctx, typ) {
		if !strings.HasPrefix(n, prefix) {
			continue
		}
		if slash {
			n = typ + "/" + n
		}
		out = append(out, n)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// recordedNames are the names of the recorded objects of a type, in the
// namespace (or the cluster scope), newest changes first, each once.
func (f *Factory) recordedNames(ctx context.Context, typ string) []string {
	t, err := f.Target([]string{typ}, false)
	if err != nil || t == nil {
		return nil
	}
	_, recs, _, err := f.Versions(ctx, t, nil, 500)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var names []string
	for _, r := range recs {
		// A name that is not plain text (a newline makes two suggestions,
		// controls reach the terminal) is not offered: it can still be
		// typed, quoted.
		if format.Cell(r.Object.Name) != r.Object.Name {
			continue
		}
		if !seen[r.Object.Name] {
			seen[r.Object.Name] = true
			names = append(names, r.Object.Name)
		}
	}
	return names
}

// CompleteVersions completes a flag that takes a version of the object
// the arguments name (diff --from/--to, restore --version) with the short
// names of its recorded versions, newest first.
func (f *Factory) CompleteVersions(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	t, err := f.Target(args, true)
	if err != nil || t == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
	defer cancel()
	_, recs, metas, err := f.Versions(ctx, t, nil, 500)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return versionCompletions(recs, metas, toComplete), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
}

// versionCompletions are the completions of a version's name: each
// version's short name beginning with toComplete, described by its verb
// and age, in the order of recs.
func versionCompletions(recs []record.ChangeRecord, metas []metav1.ObjectMeta, toComplete string) []string {
	var out []string
	for i := range recs {
		// A short name is letters, digits and dashes: safe to offer (a
		// name that is not one is offered only if plain text). The verb is
		// recorded, hostile: a tab or newline in it would add candidates
		// to cobra's protocol, so it goes as a cell of the one escape.
		n := ShortName(&recs[i], metas[i].Name)
		if !strings.HasPrefix(n, toComplete) || format.Cell(n) != n {
			continue
		}
		out = append(out, n+"\t"+format.Cell(recs[i].Verb)+" "+format.Age(recs[i].ChangedAt.Time)+" ago")
	}
	return out
}

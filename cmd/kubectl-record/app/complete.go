package app

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// completeObjects completes TYPE/NAME (or NAME after TYPE) with the names
// the record holds for that type in the namespace: objects deleted long
// ago included, which the cluster can no longer list.
func (o *options) completeObjects(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
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
	for _, n := range o.recordedNames(ctx, typ) {
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
func (o *options) recordedNames(ctx context.Context, typ string) []string {
	t, err := o.target([]string{typ}, false)
	if err != nil || t == nil {
		return nil
	}
	_, recs, _, err := o.versions(ctx, t, nil, 500)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var names []string
	for _, r := range recs {
		// A name that is not plain text (a newline makes two suggestions,
		// controls reach the terminal) is not offered: it can still be
		// typed, quoted.
		if cell(r.Object.Name) != r.Object.Name {
			continue
		}
		if !seen[r.Object.Name] {
			seen[r.Object.Name] = true
			names = append(names, r.Object.Name)
		}
	}
	return names
}

// completePlans completes the names of the caller's plans.
func (o *options) completePlans(cluster *bool) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
		defer cancel()
		rc, err := o.record()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		if *cluster {
			l, err := rc.ClusterRestorePlans().List(ctx, metav1.ListOptions{Limit: 200})
			if err == nil {
				for _, p := range l.Items {
					names = append(names, p.Name)
				}
			}
		} else if ns, err := o.namespace(); err == nil {
			l, err := rc.RestorePlans(ns).List(ctx, metav1.ListOptions{Limit: 200})
			if err == nil {
				for _, p := range l.Items {
					names = append(names, p.Name)
				}
			}
		}
		var out []string
		for _, n := range names {
			if strings.HasPrefix(n, toComplete) {
				out = append(out, n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

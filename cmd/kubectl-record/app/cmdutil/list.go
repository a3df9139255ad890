package cmdutil

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/options-record/options-record/cmd/kubectl-record/app/format"
)

// Collect lists pages (opts.Limit items each, following continue tokens)
// until the list ends or limit items are read, and returns at most limit.
func Collect[T any](opts metav1.ListOptions, limit int64, page func(metav1.ListOptions) (items []T, cont string, err error)) ([]T, error) {
	opts.Limit = min(limit, 100)
	var all []T
	for {
		items, cont, err := page(opts)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if cont == "" || int64(len(all)) >= limit {
			break
		}
		opts.Continue = cont
	}
	return all[:min(int64(len(all)), limit)], nil
}

// Window is --user, --since, --since-time and --limit, as field selectors.
type Window struct {
	User      string
	since     time.Duration
	sinceTime string
	Limit     int64
}

// AddFlags adds the window's flags to cmd.
func (w *Window) AddFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&w.User, "user", "", "Only what this user did (the authenticated username)")
	cmd.Flags().DurationVar(&w.since, "since", 0, "Only the last period, such as 2h or 30m")
	cmd.Flags().StringVar(&w.sinceTime, "since-time", "", "Only after this time (RFC 3339, such as 2026-11-25T09:00:00Z)")
	cmd.Flags().Int64Var(&w.Limit, "limit", 500, "At most this many rows, newest first")
}

// Selectors are the field selector requirements of the window.
func (w *Window) Selectors() ([]string, error) {
	var s []string
	if w.User != "" {
		s = append(s, Field("actor.username", w.User))
	}
	switch {
	case w.since != 0 && w.sinceTime != "":
		return nil, usageError{fmt.Errorf("--since and --since-time: give one")}
	case w.since < 0:
		return nil, usageError{fmt.Errorf("--since %s: want a positive duration", w.since)}
	case w.since > 0:
		s = append(s, Field("since", "-"+w.since.String()))
	case w.sinceTime != "":
		if _, err := time.Parse(time.RFC3339, w.sinceTime); err != nil {
			return nil, usageError{fmt.Errorf("--since-time: %w", err)}
		}
		s = append(s, Field("since", w.sinceTime))
	}
	if w.Limit <= 0 {
		return nil, usageError{fmt.Errorf("--limit %d: want at least 1", w.Limit)}
	}
	return s, nil
}

// ParseTime reads an RFC 3339 time, or a duration before now (2h, -2h).
func ParseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(strings.TrimPrefix(s, "-"))
	if err != nil || d <= 0 {
		return time.Time{}, usageError{fmt.Errorf("%q: want an RFC 3339 time (2026-11-25T09:00:00Z) or a duration before now (2h)", s)}
	}
	return format.Now().Add(-d), nil
}

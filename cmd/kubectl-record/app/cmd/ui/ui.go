package ui

import (
	"context"
	"fmt"
	neturl "net/url"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/options-record/options-record/api/escape"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmdutil"
	uiserver "github.com/options-record/options-record/cmd/kubectl-record/app/ui"
)

type options struct {
	*cmdutil.Factory
	addr      string
	handover  string
	noBrowser bool
	link      string
	since     time.Duration
	all       bool
}

// NewCmdUI returns kubectl record ui.
func NewCmdUI(f *cmdutil.Factory) *cobra.Command {
	u := &options{Factory: f}
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "The incident's timeline in a browser: changes, diffs, restores, plans",
		Long: `Start a web page on this machine (loopback only, a random port) that shows the
namespace's changes (or, with -A, every namespace you may read) on a time
axis, one lane per object, coloured by verb, refused writes marked; an
object's versions with a side-by-side diff (lists matched by key); a restore
that shows the server-side dry run before asking; plans as of a time or
undoing a user. It reads and writes with your kubeconfig's credentials, as
the other verbs do: nothing new runs in the cluster.

The URL printed carries a one-time token and a random path: the page answers
nobody else. The browser is not given the token on its command line (which
every local user can read) but a private file that sends it on, made in a new
0700 directory (removed when the page stops) under --handover-dir: by default,
on Linux, your home (a snap browser, Ubuntu's default, reads no other
directory of yours, and no hidden one), else $TMPDIR. If the browser shows
"File not found", paste the printed URL into its address bar. Filters stay in
the page's address.`,
		Example: `  kubectl record ui -n shop
  kubectl record ui -A --no-browser`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return u.run(cmd.Context()) },
	}
	cmd.Flags().StringVar(&u.addr, "address", "127.0.0.1:0", "Loopback address to listen on")
	cmd.Flags().BoolVar(&u.noBrowser, "no-browser", false, "Print the URL only; do not open a browser")
	cmd.Flags().StringVar(&u.handover, "handover-dir", os.Getenv("KUBECTL_RECORD_HANDOVER_DIR"),
		"Where the browser's private hand-over file is made: a directory of yours that others may not write, and that the browser can read (default: $KUBECTL_RECORD_HANDOVER_DIR, else on Linux $HOME, else $TMPDIR)")
	cmd.Flags().DurationVar(&u.since, "since", 2*time.Hour, "The time window the page opens with (it has its own filter)")
	cmd.Flags().BoolVarP(&u.all, "all-namespaces", "A", false, "Open with every namespace you may read")
	cmd.Flags().StringVar(&u.link, "link", "", "Open the view of a link a colleague shared (its filters; the link's own host and port are not used)")
	return cmd
}

func (u *options) run(ctx context.Context) error {
	if _, err := u.Record(); err != nil {
		return err
	}
	srv, err := uiserver.Start(uiserver.Options{Backend: &backend{u.Factory}, Addr: u.addr, HandoverDir: u.handover})
	if err != nil {
		return err
	}
	query := "&since=" + neturl.QueryEscape(u.since.String())
	if u.all {
		query += "&all=true"
	}
	if u.link != "" {
		l, err := neturl.Parse(u.link)
		if err != nil {
			_ = srv.Close(context.Background())
			return cmdutil.Usagef("--link: %w", err)
		}
		q := l.Query()
		q.Del("token")
		if len(q) > 0 {
			query = "&" + q.Encode()
		}
	}
	defer func() {
		stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Close(stop)
	}()
	fmt.Fprintf(u.Streams.Out, "The timeline is at %s (only this URL opens it; Ctrl-C stops it)\n", srv.URL()+query)
	if !u.noBrowser {
		// The browser is started with a file of ours (0600, in a 0700
		// directory) that sends it on: the token is on no command line,
		// where every local user could read it.
		// The URL printed above stays the way in by hand: it is on the
		// terminal only, never on a command line, and its token works
		// once, whichever of the two is opened first.
		open, err := srv.Handover(query)
		if err == nil {
			err = openBrowser(open)
		}
		if err != nil {
			fmt.Fprintf(u.Streams.ErrOut, "no browser opened (%v): open the URL above\n", escape.Line(err.Error()))
		} else {
			// A sandboxed browser (a snap, a flatpak) may not read the
			// file and say so in its window only: the opener succeeded.
			fmt.Fprintf(u.Streams.ErrOut, "Opened %s in your browser. If the browser shows \"File not found\" "+
				"(a sandboxed browser that cannot read that directory: see --handover-dir), open the URL above: paste it into the address bar.\n",
				escape.Line(open))
		}
	}
	<-ctx.Done()
	return nil
}

// openBrowser opens url (a file:// URL, never one with a secret) in the
// desktop's browser, when there is one.
func openBrowser(url string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }() // reaped, not waited for
	return nil
}

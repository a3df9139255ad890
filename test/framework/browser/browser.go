// Package browser starts Debian's chromium, headless, for the tests of the
// timeline page (kubectl record ui), driven with chromedp. make's setup
// installs chromium (hack/ensure-deps.sh); under make a missing browser
// fails the test, elsewhere it skips it.
package browser

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/options-record/options-record/store/pgtest"
)

// Path is Debian's chromium.
const Path = "/usr/bin/chromium"

// Start starts a browser at the given window size and returns its context
// and the count of JavaScript dialogs its pages opened (an injected
// alert() is one; each is dismissed).
func Start(t testing.TB, width, height int) (context.Context, *atomic.Int32) {
	t.Helper()
	if _, err := os.Stat(Path); err != nil {
		pgtest.Unavailable(t, "Debian's chromium", "make test", err)
	}
	// Without the networking flags Chromium reaches for Google's hosts at
	// every start, which a closed network refuses.
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(Path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-first-run", true), chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	dialogs := new(atomic.Int32)
	if err := chromedp.Listen(ctx, func(ev any) {
		if d, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			dialogs.Add(1)
			t.Logf("a JavaScript dialog opened: %q", d.Message)
			go func() {
				_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
			}()
		}
	}); err != nil {
		t.Fatal(err)
	}
	return ctx, dialogs
}

// Screenshot saves the page as dir/name.png for review.
func Screenshot(t testing.TB, ctx context.Context, dir, name string) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Error(err)
		return
	}
	t.Logf("screenshot: %s", path)
}

// Do runs the steps or fails the test.
func Do(t testing.TB, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// Text is the text of the first element sel (a CSS selector) matches.
func Text(t testing.TB, ctx context.Context, sel string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return v
}

// Attr is the attribute name of the first element sel matches.
func Attr(t testing.TB, ctx context.Context, sel, name string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(sel), name))
	if err != nil {
		t.Fatalf("attribute %s of %s: %v", name, sel, err)
	}
	return v.Value
}

// Eval evaluates a JavaScript expression in the page.
func Eval[T any](t testing.TB, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

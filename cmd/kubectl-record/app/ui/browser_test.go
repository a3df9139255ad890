package ui

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/options-record/options-record/test/framework/browser"
)

// many is a record of n changes over n/5 objects in the last hour.
type many struct {
	nothing
	n int
}

func (m many) Changes(context.Context, Query) (*Timeline, error) {
	now := time.Now()
	tl := &Timeline{Namespace: "shop"}
	verbs := []string{"create", "update", "patch", "patch", "delete"}
	for i := 0; i < m.n; i++ {
		obj := i % (m.n / 5)
		tl.Events = append(tl.Events, Event{At: now.Add(-time.Duration(i) * 300 * time.Millisecond), Kind: "change",
			Verb: verbs[i/(m.n/5)], Resource: "configmaps", Namespace: "shop", Name: fmt.Sprintf("cm-%05d", obj),
			UID: fmt.Sprintf("uid-%05d", obj), User: "bob"})
	}
	return tl, nil
}

// TestTenThousandChangesStayResponsive: the timeline of 10,000 changes
// renders in Chromium within a second, keeps only the lanes in view in the
// page (virtualized), and scrolls to the last object.
func TestTenThousandChangesStayResponsive(t *testing.T) {
	s, err := Start(Options{Backend: many{n: 10000}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	ctx, _ := browser.Start(t, 1366, 768)
	browser.Do(t, ctx, chromedp.Navigate(s.URL()), chromedp.WaitVisible(chromedp.CSS(`.lane`)))
	ms, err := strconv.Atoi(browser.Attr(t, ctx, "body", "data-rendered"))
	lanes := browser.Eval[int](t, ctx, `document.querySelectorAll(".lane").length`)
	t.Logf("10,000 changes on 2,000 objects: first render %d ms, %d lanes in the page; status %q", ms, lanes, browser.Text(t, ctx, "#status"))
	if err != nil || ms > 1000 {
		t.Errorf("first render: %d ms (%v), want at most 1000", ms, err)
	}
	if lanes == 0 || lanes > 100 {
		t.Errorf("%d lanes in the page: want only those in view", lanes)
	}
	if dir := os.Getenv("OPTIONS_RECORD_SCREENSHOTS"); dir != "" {
		browser.Screenshot(t, ctx, dir, "ten-thousand")
	}
	start := time.Now()
	browser.Eval[float64](t, ctx, `document.getElementById("lanes").scrollTop = 1e9`)
	browser.Do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`.lane[data-object="shop/configmaps/cm-01999"]`)))
	t.Logf("scrolled to the last lane in %v", time.Since(start))
}

package ui

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
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
			UID: fmt.Sprintf("uid-%05d", obj), User: "bob", ShortName: fmt.Sprintf("cm-%05d-%08x", obj, i)})
	}
	return tl, nil
}

// TestTenThousandChangesStayResponsive: the timeline of 10,000 changes,
// opened in Chromium the way the plugin opens it (the hand-over file, the
// token on no command line), renders every event, keeps only the lanes in
// view in the page (virtualized), and scrolls to the last object. The time
// of the first render is logged here and measured by
// BenchmarkTimelineFirstRender.
func TestTenThousandChangesStayResponsive(t *testing.T) {
	s, err := Start(Options{Backend: many{n: 10000}, HandoverDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	open, err := s.Handover("")
	if err != nil {
		t.Fatal(err)
	}
	ctx, _ := browser.Start(t, 1366, 768)
	browser.Do(t, ctx, chromedp.Navigate(open), chromedp.WaitVisible(chromedp.CSS(`.lane`)))
	ms := browser.Attr(t, ctx, "body", "data-rendered")
	lanes := browser.Eval[int](t, ctx, `document.querySelectorAll(".lane").length`)
	status := browser.Text(t, ctx, "#status")
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("10,000 changes on 2,000 objects: first render %s ms, %d lanes in the page; status %q", ms, lanes, status)
	if !strings.HasPrefix(status, "10000 events on 2000 objects") {
		t.Errorf("status %q, want every event on every object", status)
	}
	if strings.Contains(loc, "token") || !strings.HasPrefix(loc, "http://"+s.host+s.base) {
		t.Errorf("the page's address after the hand-over: %s", loc)
	}
	if lanes == 0 || lanes > 100 {
		t.Errorf("%d lanes in the page: want only those in view", lanes)
	}
	// A mark names its change by its short name (kubectl get change NAME).
	if title := browser.Eval[string](t, ctx, `document.querySelector(".lane .mark").title`); !strings.Contains(title, " · cm-") {
		t.Errorf("a mark's title has no short name: %q", title)
	}
	if dir := os.Getenv("OPTIONS_RECORD_SCREENSHOTS"); dir != "" {
		browser.Screenshot(t, ctx, dir, "ten-thousand")
	}
	start := time.Now()
	browser.Eval[float64](t, ctx, `document.getElementById("lanes").scrollTop = 1e9`)
	browser.Do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`.lane[data-object="shop/configmaps/cm-01999"]`)))
	t.Logf("scrolled to the last lane in %v", time.Since(start))
}

// BenchmarkTimelineFirstRender reports the page's own measure of its first
// render of 10,000 changes (render-ms), reloading it at each iteration.
func BenchmarkTimelineFirstRender(b *testing.B) {
	s, err := Start(Options{Backend: many{n: 10000}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	ctx, _ := browser.Start(b, 1366, 768)
	browser.Do(b, ctx, chromedp.Navigate(s.URL()), chromedp.WaitVisible(chromedp.CSS(`.lane`)))
	total := 0
	for i := 0; i < b.N; i++ {
		browser.Do(b, ctx, chromedp.Navigate("http://"+s.host+s.base), chromedp.WaitVisible(chromedp.CSS(`body[data-rendered] .lane`)))
		ms, err := strconv.Atoi(browser.Attr(b, ctx, "body", "data-rendered"))
		if err != nil {
			b.Fatal(err)
		}
		total += ms
	}
	b.ReportMetric(float64(total)/float64(b.N), "render-ms")
}

package ui_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// fixClock makes the page's clock start at now (Date.now() only; it
// advances from there) and its time zone zone, for every document the
// tab opens after the call.
func fixClock(t *testing.T, ctx context.Context, now time.Time, zone string) {
	t.Helper()
	script := fmt.Sprintf(`(() => { const base = %d, t0 = performance.now(); Date.now = () => Math.floor(base + performance.now() - t0); })();`, now.UnixMilli())
	do(t, ctx, "fix the page's clock and zone", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: zone}); err != nil {
			return fmt.Errorf("time zone: %w", err)
		}
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: script})
		return err
	}))
}

// TestUIUsageDates: with the browser in Los Angeles at 15:20 UTC, the
// Usage page asks for whole UTC days ending now (not in the future), its
// last daily column is today's UTC date and holds the usage of 13:00 to
// 15:00 UTC today (not yesterday's), and the hourly view's last column is
// the current UTC hour. Before the fix the 7-day range ran from the next
// hour a week back, so 15:00 UTC fell in a column labelled yesterday and
// today had none.
func TestUIUsageDates(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: skipped with -short")
	}
	f := startFixtureAPI(t)
	ctx, problems := browser(t)
	now := time.Date(2026, 3, 10, 15, 20, 0, 0, time.UTC)
	fixClock(t, ctx, now, "America/Los_Angeles")
	const long = 30 * time.Second

	do(t, ctx, "open usage", chromedp.Navigate(f.URL+"/ui/usage"))
	until(t, ctx, "the page's clock is fixed", fmt.Sprintf(`Date.now() >= %d && new Date(Date.now()).getTimezoneOffset() === 420`, now.UnixMilli()), long)
	until(t, ctx, "seven daily columns", `document.querySelectorAll('#usage-chart g.col').length === 7`, long)
	from, to := f.usageFrom.Load(), f.usageTo.Load()
	if want := time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC).Unix(); from != want {
		t.Errorf("usage asked from=%s, want %s (a UTC midnight, 7 days with today)", time.Unix(from, 0).UTC(), time.Unix(want, 0).UTC())
	}
	if to < now.Unix() || to > now.Unix()+60 {
		t.Errorf("usage asked to=%s, want now (%s): the range ends now, not in the future", time.Unix(to, 0).UTC(), now)
	}
	labels, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#usage-chart g.col')].map((c) => c.dataset.label)`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"2026-03-04", "2026-03-05", "2026-03-06", "2026-03-07", "2026-03-08", "2026-03-09", "2026-03-10"}
	if fmt.Sprint(labels) != fmt.Sprint(want) {
		t.Errorf("daily column labels %v, want %v (UTC days ending today)", labels, want)
	}
	// The fixture's usage is 13:00-15:00 UTC today: 3 x 8 H100 hours and
	// 2 x 2 A100 hours, all in today's column.
	totals, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#usage-chart g.col')].map((c) => c.dataset.total)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(totals) != 7 || totals[6] != "28.000" || totals[5] != "0.000" {
		t.Errorf("daily column totals %v, want 28 GPU-hours today and none yesterday", totals)
	}
	until(t, ctx, "range text ends now, in UTC", textHas("#usage-span", "2026-03-04 00:00 – 2026-03-10 15:2")+" && "+textHas("#usage-span", "UTC"), long)

	// Hourly: the last 24 columns end with the current UTC hour.
	click(t, ctx, "last 24h", `#usage-range button[data-range="24h"]`)
	until(t, ctx, "hourly columns", `document.querySelectorAll('#usage-chart g.col').length === 24 && `+textHas("#usage-span", "hourly"), long)
	until(t, ctx, "first and last hour", `(() => { const c = [...document.querySelectorAll('#usage-chart g.col')];
		return c[0].dataset.label === '2026-03-09 16:00' && c.at(-1).dataset.label === '2026-03-10 15:00' && c.at(-1).dataset.total === '10.000'; })()`, long)
	if from := f.usageFrom.Load(); from != time.Date(2026, 3, 9, 16, 0, 0, 0, time.UTC).Unix() {
		t.Errorf("hourly usage asked from=%s, want 2026-03-09 16:00 UTC", time.Unix(from, 0).UTC())
	}
	for _, p := range problems() {
		t.Errorf("browser: %s", p)
	}
}

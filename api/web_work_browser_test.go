package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
)

// TestWebWorkInABrowser works through the pages in headless Chromium,
// with plain forms and no script. It filters the list by severity and
// text and opens a finding, acknowledges it and silences it from its
// page. Then it expires the silence and opens a run from the run list.
// A cross-site form post at a finding action is refused.
func TestWebWorkInABrowser(t *testing.T) {
	e := newEnv(t, testTokens, nil)
	ctx := context.Background()
	base := e.srv.URL
	cpu, mem := e.ids["cpu"], e.ids["mem"]
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<html><body onload="document.forms[0].submit()"><form method="post" action="%s/ui/findings/%s/dismiss">
<input type="hidden" name="csrf" value="guess"><input type="hidden" name="reason" value="not_an_issue"></form></body></html>`, base, cpu)
	}))
	defer evil.Close()

	b := browser(t)
	var loc, text, title string
	var rows int
	if err := chromedp.Run(b,
		chromedp.Navigate(base+"/ui/login"),
		chromedp.WaitVisible(`form#login input[name=token]`),
		chromedp.SendKeys(`input[name=token]`, adminSecret),
		chromedp.Submit(`form#login`),
		chromedp.WaitVisible(`form#filters`),
		// Filter by severity.
		chromedp.SetValue(`select[name=severity]`, "critical"),
		chromedp.Submit(`form#filters`),
		// The list the filter answers: the page before it shows #matched
		// too, and only the answer marks critical selected.
		chromedp.WaitReady(`//select[@name="severity"]/option[@value="critical"][@selected]`, chromedp.BySearch),
		chromedp.WaitVisible(`#matched`),
		chromedp.Location(&loc),
		chromedp.Evaluate(`document.querySelectorAll('table#findings tr.finding').length`, &rows),
	); err != nil {
		t.Fatal(err)
	}
	if rows != 2 || !strings.Contains(loc, "severity=critical") {
		t.Fatalf("severity filter: %d rows at %s", rows, loc)
	}
	// Filter by text, open the one finding, acknowledge it.
	if err := chromedp.Run(b,
		chromedp.Navigate(base+"/ui/findings"),
		chromedp.WaitVisible(`form#filters`),
		chromedp.SendKeys(`input[name=q]`, "memory"),
		chromedp.Submit(`form#filters`),
		// Typing sets the field's value, not its attribute: only the
		// answer to the filter renders value="memory".
		chromedp.WaitReady(`//form[@id="filters"]//input[@name="q"][@value="memory"]`, chromedp.BySearch),
		chromedp.WaitVisible(`#matched`),
		chromedp.Evaluate(`document.querySelectorAll('table#findings tr.finding').length`, &rows),
		chromedp.Click(`table#findings a`),
		chromedp.WaitVisible(`dl#finding`),
		chromedp.Evaluate(`document.querySelector('dl#finding time').title`, &title),
		chromedp.Click(`button.ack`),
		chromedp.WaitVisible(`#flash`),
		chromedp.Text(`#flash`, &text),
	); err != nil {
		t.Fatal(err)
	}
	if rows != 1 || title != "2026-11-29 10:00:00Z" || text != "finding "+mem+": acknowledged" {
		t.Fatalf("text filter %d rows, time title %q, flash %q", rows, title, text)
	}
	var state string
	if err := chromedp.Run(b, chromedp.Text(`#state`, &state)); err != nil || state != "detected acked" {
		t.Fatalf("state after ack %q (%v)", state, err)
	}
	if f := e.finding("mem"); f.AcknowledgedAt == nil {
		t.Fatal("the ack was not stored")
	}
	// Silence it from its page, then expire the silence.
	var silRows int
	if err := chromedp.Run(b,
		chromedp.SendKeys(`#silence-form input[name=comment]`, "maintenance window"),
		chromedp.Click(`#silence-form button.silence`),
		chromedp.WaitVisible(`table#silences`),
		chromedp.Evaluate(`document.querySelectorAll('table#silences tr.silence').length`, &silRows),
	); err != nil {
		t.Fatal(err)
	}
	sils, err := e.store.Silences(ctx, e.now, true)
	if err != nil || len(sils) != 1 || silRows != 1 || !sameSilence(sils[0], findings.Silence{ID: sils[0].ID, Matchers: findings.Matchers{Resource: "vm/101", SignalType: "high_memory"}, Comment: "maintenance window", Author: "ops", StartsAt: e.now, EndsAt: e.now.Add(2 * time.Hour), CreatedAt: e.now}) ||
		sils[0].Author != "ops" || sils[0].Comment != "maintenance window" || !sils[0].EndsAt.Equal(e.now.Add(2*time.Hour)) {
		t.Fatalf("silence: %d rows, %+v (%v)", silRows, sils, err)
	}
	if err := chromedp.Run(b,
		chromedp.Click(`tr.silence button.expire`),
		// The silences page already shows the create flash: wait for
		// the page the expire answers, not for any flash.
		chromedp.WaitVisible(`//*[@id="flash"][contains(., ": expired")]`, chromedp.BySearch),
		chromedp.Text(`#flash`, &text),
	); err != nil {
		t.Fatal(err)
	}
	if text != "silence "+sils[0].ID+": expired" {
		t.Fatalf("expire flash %q", text)
	}
	// A run from the run list.
	if err := chromedp.Run(b,
		chromedp.Navigate(base+"/ui/runs"),
		chromedp.Click(`table#runs a`),
		chromedp.WaitVisible(`dl#run`),
		chromedp.Text(`#run-id`, &text),
	); err != nil {
		t.Fatal(err)
	}
	if text != e.runID {
		t.Fatalf("run page of %q, want %s", text, e.runID)
	}
	// The cross-site post is refused; the finding stays undismissed.
	if err := chromedp.Run(b, chromedp.Navigate(evil.URL), chromedp.WaitReady(`body`)); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyState(t, 10*time.Second, "the cross-site post answers from "+base, func() (bool, string) {
		_ = chromedp.Run(b, chromedp.Location(&loc), chromedp.Text(`body`, &text))
		return strings.HasPrefix(loc, base), loc + ": " + text
	})
	if !strings.Contains(text, "cross-site or stale form refused") || e.finding("cpu").DismissedReason != "" {
		t.Fatalf("the cross-site post answered %s: %q; dismissed %q", loc, text, e.finding("cpu").DismissedReason)
	}
}

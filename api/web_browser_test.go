package api_test

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/store"
	"github.com/patrold/patrold/store/records"
)

// storeApprovals decides approvals rows of the real store (the part of
// the assistant the pages reach; resuming sessions is tested with it).
type storeApprovals struct {
	st  *store.Store
	now func() time.Time
}

func (s storeApprovals) List(ctx context.Context, page findings.Page) (any, string, error) {
	recs, err := s.st.PendingApprovals(ctx, s.now(), nil, page.Limit)
	if err != nil {
		return nil, "", err
	}
	out := []assistant.Approval{}
	for _, r := range recs {
		out = append(out, assistant.Approval{ID: r.ID, FindingID: r.FindingID, SessionID: r.SessionID, Attempt: r.Attempt, ResourceID: r.ResourceID,
			Action: r.Action, Args: r.Args, Risk: assistant.Risk(r.Risk), Reason: r.Reason, State: assistant.ApprovalState(r.State),
			CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt})
	}
	return out, "", nil
}

func (s storeApprovals) decide(ctx context.Context, id, state, actor string) (any, error) {
	ok, err := s.st.DecideApproval(ctx, id, state, actor, s.now())
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("approval %s: %w", id, api.ErrApprovalDecided)
	}
	return map[string]string{"id": id, "state": state}, nil
}

func (s storeApprovals) Approve(ctx context.Context, id, actor string) (any, error) {
	return s.decide(ctx, id, "approved", actor)
}

func (s storeApprovals) Deny(ctx context.Context, id, actor string) (any, error) {
	return s.decide(ctx, id, "denied", actor)
}

// browser starts headless Chromium (Debian's chromium package) with the
// flags this machine's closed network needs.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is needed (.ci/run installs it)")
		}
		t.Skip("no chromium")
	}
	// Not t.TempDir: Chromium's helper processes can still write into the
	// profile for a moment after the browser exits, which fails TempDir's
	// cleanup. The profile is removed after the browser is stopped (cleanups
	// run last first), retried while those writes settle.
	profile, err := os.MkdirTemp("", "patrold-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 50 {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("chromium profile %s left behind", profile)
	})
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancel3)
	return ctx
}

const hostile = `<img src=x onerror="document.title='pwned'"><script>document.title='pwned'</script>`

// TestWebPagesInABrowser drives the pages in headless Chromium. It goes
// through the login, the findings list and a finding whose names are
// hostile markup (rendered as text: no script runs, no element is
// injected). Then an approval is approved through its form, and a
// cross-site form post is refused.
func TestWebPagesInABrowser(t *testing.T) {
	var e *env
	e = newEnv(t, testTokens, func(o *api.Options) {
		o.Approvals = storeApprovals{st: o.Store.(*store.Store), now: func() time.Time { return e.now }}
	})
	ctx := context.Background()
	// A finding from a source whose names are markup.
	bad := findings.Observation{Key: "high_cpu", ResourceID: "vm/666", ResourceKind: "vm", ResourceName: prompt.SafeName(hostile), Category: findings.CategoryPerformance,
		Severity: findings.SeverityCritical, Source: findings.SourceDeterministic, Title: prompt.Safe("CPU high on "+hostile, 200), Description: prompt.Safe(`"><b id="inj">bold</b>`, 4000)}
	badID := bad.Normalize()
	if _, err := e.store.CommitRun(ctx, findings.RunInput{RunID: findings.NewID(e.now), Now: e.now, Observations: []findings.Observation{bad},
		Policy: findings.DefaultPublishPolicy()}, func([]findings.Change) (findings.RunRecord, []findings.OutboxDraft, error) {
		return findings.RunRecord{ID: findings.NewID(e.now), Trigger: "manual", Status: "critical", Analysis: "deterministic", StartedAt: e.now, Complete: true}, nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	var apIDs []string
	for i, action := range []string{"restart_guest", "prune_snapshots"} {
		id := findings.NewID(e.now.Add(time.Duration(i) * time.Millisecond))
		apIDs = append(apIDs, id)
		if err := e.store.InsertApproval(ctx, records.ApprovalRecord{ID: id, FindingID: e.ids["mem"], SessionID: "s" + id, Attempt: 1,
			ResourceID: "vm/101", Action: action, Args: []byte(`{}`), Risk: "medium", State: "pending", CreatedAt: e.now,
			ExpiresAt: e.now.Add(time.Hour), StartedAt: e.now, Reason: prompt.Safe("memory "+hostile, 280)}); err != nil {
			t.Fatal(err)
		}
	}
	// The cross-site page: another origin on loopback posting a form at
	// the second approval, as an attacker's page would.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<html><body onload="document.forms[0].submit()"><form method="post" action="%s/ui/approvals/%s/deny">
<input type="hidden" name="csrf" value="guess"></form></body></html>`, e.srv.URL, apIDs[1])
	}))
	defer evil.Close()

	b := browser(t)
	base := e.srv.URL
	var loc, title, text string
	var shot []byte
	var injected, rows int
	if err := chromedp.Run(b,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(`form#login input[name=token]`),
		chromedp.Location(&loc),
	); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(loc, base+"/ui/login?next=") {
		t.Fatalf("an anonymous visit landed on %s, want the login", loc)
	}
	// A wrong token is refused on the page.
	if err := chromedp.Run(b,
		chromedp.SendKeys(`input[name=token]`, "wrong-token"),
		chromedp.Submit(`form#login`),
		chromedp.WaitVisible(`#flash`),
		chromedp.Text(`#flash`, &text),
	); err != nil {
		t.Fatal(err)
	}
	if text != "That token is not valid." {
		t.Fatalf("wrong token: %q", text)
	}
	if err := chromedp.Run(b,
		chromedp.SendKeys(`input[name=token]`, adminSecret),
		chromedp.Submit(`form#login`),
		chromedp.WaitVisible(`table#findings`),
		chromedp.Evaluate(`document.querySelectorAll('table#findings tr.finding').length`, &rows),
		chromedp.Text(`#who`, &text),
		chromedp.FullScreenshot(&shot, 100),
	); err != nil {
		t.Fatal(err)
	}
	if rows != len(seedObservations)+1 || text != "ops" {
		t.Fatalf("findings page: %d rows (want %d), who %q", rows, len(seedObservations)+1, text)
	}
	if img, err := png.Decode(bytes.NewReader(shot)); err != nil || img.Bounds().Dx() < 100 {
		t.Fatalf("screenshot: %v", err)
	}
	// The hostile finding: its markup is text.
	var resource, evidenceTag string
	if err := chromedp.Run(b,
		chromedp.Navigate(base+"/ui/findings/"+badID),
		chromedp.WaitVisible(`dl#finding`),
		chromedp.Title(&title),
		chromedp.Text(`#resource`, &resource),
		chromedp.Evaluate(`document.querySelectorAll('main img, main script, b#inj').length`, &injected),
		chromedp.Evaluate(`document.querySelector('#evidence').tagName`, &evidenceTag),
	); err != nil {
		t.Fatal(err)
	}
	if title != "CPU high on "+hostile+" · patrold" || injected != 0 || resource != "vm/666 ("+prompt.Name(hostile)+")" || evidenceTag != "PRE" {
		t.Fatalf("hostile finding: title %q, %d injected elements, resource %q", title, injected, resource)
	}
	// Approve through the form.
	if err := chromedp.Run(b,
		chromedp.Navigate(base+"/ui/approvals"),
		chromedp.WaitVisible(`table#approvals`),
		chromedp.Evaluate(`document.querySelectorAll('main img, main script').length`, &injected),
		chromedp.Click(`tr[data-id="`+apIDs[0]+`"] button.approve`),
		chromedp.WaitVisible(`#flash`),
		chromedp.Text(`#flash`, &text),
	); err != nil {
		t.Fatal(err)
	}
	if text != "approval "+apIDs[0]+": approved" || injected != 0 {
		t.Fatalf("approve: flash %q, %d injected", text, injected)
	}
	// The cross-site post is refused; the approval stays pending.
	if err := chromedp.Run(b,
		chromedp.Navigate(evil.URL),
		chromedp.WaitReady(`body`),
	); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyState(t, 10*time.Second, "the cross-site post answers from "+base, func() (bool, string) {
		_ = chromedp.Run(b, chromedp.Location(&loc), chromedp.Text(`body`, &text))
		return strings.HasPrefix(loc, base), loc + ": " + text
	})
	if !strings.Contains(text, "cross-site or stale form refused") {
		t.Fatalf("the cross-site post answered %s: %q", loc, text)
	}
	for i, want := range []string{"approved", "pending"} {
		ap, err := e.store.Approval(ctx, apIDs[i])
		if err != nil || ap.State != want {
			t.Errorf("approval %d: state %q, want %q (%v)", i, ap.State, want, err)
		}
	}
	// Audited with the session's token name.
	evs, _ := e.store.AuditEvents(ctx, 10)
	found := false
	for _, ev := range evs {
		found = found || (ev.Route == "web_approval_decide" && ev.TargetID == apIDs[0] && ev.TokenName == "ops" && ev.Action == "approve")
	}
	if !found {
		t.Fatalf("no audit event for the approval: %+v", evs)
	}
}

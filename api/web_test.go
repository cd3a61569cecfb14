package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/store"
	"github.com/patrold/patrold/store/records"
)

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// webClient is a cookie-keeping client that does not follow redirects.
func webClient(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func webGet(t *testing.T, c *http.Client, u string) (int, string, http.Header) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func webPost(t *testing.T, c *http.Client, u string, form url.Values, hdr map[string]string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// login logs c in with secret and returns the session's CSRF token.
func login(t *testing.T, c *http.Client, base, secret string) string {
	t.Helper()
	_, page, _ := webGet(t, c, base+"/ui/login")
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("login page without a csrf field:\n%s", page)
	}
	code, _, h := webPost(t, c, base+"/ui/login", url.Values{"csrf": {m[1]}, "token": {secret}, "next": {"/ui/approvals"}}, nil)
	if code != http.StatusSeeOther || h.Get("Location") != "/ui/approvals" {
		t.Fatalf("login: %d %v", code, h)
	}
	_, page, _ = webGet(t, c, base+"/ui/approvals")
	m = csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("approvals page without a csrf field:\n%s", page)
	}
	return m[1]
}

// TestWebSessionAndFormRules: the session cookie is HttpOnly and
// SameSite=Strict and holds no token; every form post needs the session's
// CSRF token and a same-origin browser; deciding needs an admin session;
// pages need a login when tokens are configured.
func TestWebSessionAndFormRules(t *testing.T) {
	var e *env
	e = newEnv(t, testTokens, func(o *api.Options) {
		o.Approvals = storeApprovals{st: o.Store.(*store.Store), now: func() time.Time { return e.now }}
	})
	ctx := context.Background()
	id := findings.NewID(e.now)
	if err := e.store.InsertApproval(ctx, records.ApprovalRecord{ID: id, FindingID: e.ids["mem"], SessionID: "s1", Attempt: 1, ResourceID: "vm/101",
		Action: "restart_guest", Args: []byte(`{}`), Risk: "medium", State: "pending", CreatedAt: e.now, ExpiresAt: e.now.Add(time.Hour), StartedAt: e.now}); err != nil {
		t.Fatal(err)
	}
	base := e.srv.URL
	anon := webClient(t)
	if code, _, h := webGet(t, anon, base+"/ui/findings"); code != http.StatusSeeOther || h.Get("Location") != "/ui/login?next=%2Fui%2Ffindings" {
		t.Fatalf("anonymous findings page: %d %v", code, h)
	}
	if code, _, h := webGet(t, anon, base+"/"); code != http.StatusSeeOther || h.Get("Location") != "/ui/findings" {
		t.Fatalf("GET /: %d %v", code, h)
	}
	// The login form's own token: a post without its cookie is refused.
	if code, _, _ := webPost(t, webClient(t), base+"/ui/login", url.Values{"csrf": {"x"}, "token": {adminSecret}}, nil); code != http.StatusForbidden {
		t.Fatalf("login without the form's cookie: %d", code)
	}
	c := webClient(t)
	csrf := login(t, c, base, adminSecret)
	u, _ := url.Parse(base)
	var sess *http.Cookie
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == "patrold_session" {
			sess = ck
		}
	}
	if sess == nil || strings.Contains(sess.Value, adminSecret) {
		t.Fatalf("session cookie %+v", sess)
	}
	// The jar hides attributes: read them from a fresh login's header.
	c2 := webClient(t)
	_, page, _ := webGet(t, c2, base+"/ui/login")
	m := csrfField.FindStringSubmatch(page)
	_, _, h := webPost(t, c2, base+"/ui/login", url.Values{"csrf": {m[1]}, "token": {adminSecret}}, nil)
	set := strings.Join(h.Values("Set-Cookie"), "\n")
	if !regexp.MustCompile(`(?m)^patrold_session=[0-9a-f]{64}; Path=/; Max-Age=43200; HttpOnly; SameSite=Strict$`).MatchString(set) {
		t.Fatalf("session cookie attributes:\n%s", set)
	}
	decide := base + "/ui/approvals/" + id + "/deny"
	for name, tc := range map[string]struct {
		form url.Values
		hdr  map[string]string
	}{
		"no csrf":          {url.Values{}, nil},
		"wrong csrf":       {url.Values{"csrf": {strings.Repeat("0", 64)}}, nil},
		"cross-site fetch": {url.Values{"csrf": {csrf}}, map[string]string{"Sec-Fetch-Site": "cross-site"}},
		"same-site fetch":  {url.Values{"csrf": {csrf}}, map[string]string{"Sec-Fetch-Site": "same-site"}},
		"foreign origin":   {url.Values{"csrf": {csrf}}, map[string]string{"Origin": "http://evil.example"}},
	} {
		if code, body, _ := webPost(t, c, decide, tc.form, tc.hdr); code != http.StatusForbidden || !strings.Contains(body, "cross-site or stale form refused") {
			t.Errorf("%s: %d %q", name, code, body)
		}
	}
	if ap, _ := e.store.Approval(ctx, id); ap.State != "pending" {
		t.Fatalf("a refused post decided the approval: %s", ap.State)
	}
	// A read token's session sees the page but cannot decide.
	r := webClient(t)
	rcsrf := login(t, r, base, readSecret)
	if _, page, _ := webGet(t, r, base+"/ui/approvals"); strings.Contains(page, `class="deny"`) || !strings.Contains(page, "admin only") {
		t.Fatalf("a read session is offered the forms:\n%s", page)
	}
	if code, _, _ := webPost(t, r, decide, url.Values{"csrf": {rcsrf}}, nil); code != http.StatusForbidden {
		t.Fatalf("a read session decided: %d", code)
	}
	// The admin session decides with its token, same-origin.
	if code, _, h := webPost(t, c, decide, url.Values{"csrf": {csrf}}, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": base}); code != http.StatusSeeOther || h.Get("Location") != "/ui/approvals" {
		t.Fatalf("deny: %d %v", code, h)
	}
	if ap, _ := e.store.Approval(ctx, id); ap.State != "denied" || ap.DecidedBy != "ops" {
		t.Fatalf("approval after deny: %+v", ap)
	}
	// Every page says no script and no framing.
	_, _, h = webGet(t, c, base+"/ui/findings/"+e.ids["cpu"])
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") || h.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("headers %v", h)
	}
	// Logging out ends the session.
	if code, _, _ := webPost(t, c, base+"/ui/logout", url.Values{"csrf": {csrf}}, nil); code != http.StatusSeeOther {
		t.Fatalf("logout: %d", code)
	}
	c.Jar.SetCookies(u, []*http.Cookie{sess})
	if code, _, _ := webGet(t, c, base+"/ui/findings"); code != http.StatusSeeOther {
		t.Fatalf("the session outlived its logout: %d", code)
	}
}

// TestWebWithoutTokens: with no token configured the pages are open and
// nothing can be decided.
func TestWebWithoutTokens(t *testing.T) {
	e := newEnv(t, nil, nil)
	c := webClient(t)
	code, page, _ := webGet(t, c, e.srv.URL+"/ui/findings")
	if code != 200 || !strings.Contains(page, "Storage full") || strings.Contains(page, "Log out") {
		t.Fatalf("open findings page: %d\n%s", code, page)
	}
	if code, _, _ := webPost(t, c, e.srv.URL+"/ui/approvals/01JNQ4X2AAAAAAAAAAAAAAAAAA/approve", url.Values{"csrf": {""}}, nil); code != http.StatusForbidden {
		t.Fatalf("an anonymous decision: %d", code)
	}
}

// TestWebFindingShowsTheTranscript: the finding page shows every step of
// an investigation's stored transcript, its final answer and what was
// stripped; hostile text in the answer renders inert.
func TestWebFindingShowsTheTranscript(t *testing.T) {
	e := newEnv(t, nil, nil)
	ctx := context.Background()
	id := e.ids["cpu"]
	draft := func(f *findings.Finding, attempt int, epoch uint64) findings.OutboxDraft {
		return findings.OutboxDraft{Subject: "remediation.requests", Type: "patrold.remediation.request", ResourceID: f.ResourceID,
			Data: map[string]any{"finding_id": f.ID, "attempt": attempt}}
	}
	if _, err := e.store.RequestInvestigations(ctx, []string{id}, findings.DefaultGate(), findings.AutonomyFull, e.now, draft); err != nil {
		t.Fatal(err)
	}
	if err := e.store.StartSession(ctx, "sess-1", id, 1, "model", e.now); err != nil {
		t.Fatal(err)
	}
	transcript := `{"session_id":"sess-1","finding_id":"` + id + `","driver":"model","outcome":"fix_verified","final_state":"DONE",` +
		`"steps":[{"turn":1,"tool":"get_resource","kind":"read","status":"ok","code":"","state_before":"START","state_after":"ESTABLISHED"},` +
		`{"turn":2,"tool":"restart_service","kind":"write","status":"ok","code":"","state_before":"ESTABLISHED","state_after":"VERIFYING"}],` +
		`"final_answer":"Restarted pveproxy <script>alert(1)</script>","final_answer_blocked":0,"note_stripped":["97%"]}`
	if err := e.store.FinishSession(ctx, "sess-1", records.SessionEnd{Outcome: "fix_verified", Summary: "restarted", FinishedAt: e.now, Transcript: []byte(transcript)}); err != nil {
		t.Fatal(err)
	}
	if ok, err := e.store.RecordOutcome(ctx, findings.Outcome{FindingID: id, SessionID: "sess-1", Attempt: 1, Outcome: findings.OutcomeFixVerified, Summary: "restarted"}, e.now); !ok || err != nil {
		t.Fatalf("outcome: %v %v", ok, err)
	}
	code, page, _ := webGet(t, webClient(t), e.srv.URL+"/ui/findings/"+id)
	if code != http.StatusOK {
		t.Fatalf("finding page: %d\n%s", code, page)
	}
	_, section, ok := strings.Cut(page, `<section class="transcript" id="transcript-sess-1">`)
	section, _, ok2 := strings.Cut(section, "</section>")
	if !ok || !ok2 {
		t.Fatalf("no transcript section:\n%s", page)
	}
	want := `
<h3>Attempt 1 transcript: session sess-1</h3>

<p>Driver model, outcome fix_verified, final state DONE.</p>
<table><thead><tr><th>Turn</th><th>Tool</th><th>Kind</th><th>Status</th><th>Code</th><th>State</th></tr></thead><tbody>
<tr><td>1</td><td>get_resource</td><td>read</td><td>ok</td><td></td><td>START &rarr; ESTABLISHED</td></tr>
<tr><td>2</td><td>restart_service</td><td>write</td><td>ok</td><td></td><td>ESTABLISHED &rarr; VERIFYING</td></tr>
</tbody></table>
<h4>Final answer</h4><pre class="final-answer">Restarted pveproxy &lt;script&gt;alert(1)&lt;/script&gt;</pre>
<p>Stripped as ungrounded: 97%</p>

`
	if section != want {
		t.Fatalf("transcript section\n%q\nwant\n%q", section, want)
	}
}

// TestWebFindingShowsInhibitedChildren: a parent's page lists the
// findings it explains, each linking to its own page (a hostile title
// escaped); the child's page names and links its parent.
func TestWebFindingShowsInhibitedChildren(t *testing.T) {
	e := newEnv(t, nil, nil)
	parent, child := e.ids["cpu"], e.ids["mem"]
	obs := []findings.Observation{seedObservations["cpu"], seedObservations["mem"]}
	obs[1].InhibitedBy = parent
	obs[1].Title = prompt.Safe(`Memory high <img src=x onerror=alert(1)>`, 4000)
	runID := findings.NewID(e.now.Add(time.Minute))
	if _, err := e.store.CommitRun(context.Background(), findings.RunInput{RunID: runID, Now: e.now.Add(time.Minute), Observations: obs, Policy: findings.DefaultPublishPolicy()},
		func(changes []findings.Change) (findings.RunRecord, []findings.OutboxDraft, error) {
			fin := e.now.Add(time.Minute)
			return findings.RunRecord{ID: runID, Trigger: "manual", Status: "warning", Analysis: "deterministic", StartedAt: e.now, FinishedAt: &fin, Complete: true, Report: []byte(`{}`)}, nil, nil
		}); err != nil {
		t.Fatal(err)
	}
	c := webClient(t)
	_, page, _ := webGet(t, c, e.srv.URL+"/ui/findings/"+parent)
	_, table, ok := strings.Cut(page, `<table id="explains">`)
	table, _, ok2 := strings.Cut(table, "</table>")
	if !ok || !ok2 {
		t.Fatalf("the parent's page lists no children:\n%s", page)
	}
	want := `<thead><tr><th>Severity</th><th>Key</th><th>Resource</th><th>Title</th><th>Last seen</th></tr></thead><tbody>
<tr><td>warning</td><td>high_memory</td><td>vm/101</td><td><a href="/ui/findings/` + child + `">Memory high &lt;img src=x onerror=alert(1)&gt;</a></td><td><time datetime="2026-11-29T10:01:00Z" title="2026-11-29 10:01:00Z">in 1 min</time></td></tr>
</tbody>`
	if table != want {
		t.Fatalf("children\n%q\nwant\n%q", table, want)
	}
	_, page, _ = webGet(t, c, e.srv.URL+"/ui/findings/"+child)
	if want := `<p id="inhibited-by">Held: explained by <a href="/ui/findings/` + parent + `">` + parent + `</a>, whose resource it depends on.</p>`; !strings.Contains(page, want) {
		t.Fatalf("the child's page does not name its parent (%s):\n%s", want, page)
	}
	if strings.Contains(page, `<table id="explains">`) {
		t.Fatal("the child's page lists children")
	}
}

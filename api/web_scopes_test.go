package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/store"
	"github.com/patrold/patrold/store/records"
)

var csrfValue = regexp.MustCompile(`name="csrf" value="[0-9a-f]+"`)

// webPages are every page a session reads, with the finding and run of
// the seed.
func webPages(e *env) []string {
	return []string{"/ui/findings", "/ui/findings?state=all&severity=critical&kind=vm&q=x&sort=key", "/ui/findings/" + e.ids["cpu"], "/ui/runs", "/ui/runs/" + e.runID, "/ui/approvals", "/ui/silences", "/ui/silences?all=1"}
}

// TestWebRefusesTriggerToken: a trigger token may call the hooks and
// nothing else. Its login is refused (403, the login page again, no
// session), every page then leads to the login whether or not the token
// rides in an Authorization header, and a decision is refused. A refused
// trigger login is no failed guess: it does not count for the throttle.
func TestWebRefusesTriggerToken(t *testing.T) {
	tokens := append(append([]api.Token(nil), testTokens...), api.Token{Name: "am", Secret: triggerSecret, Scope: api.ScopeTrigger})
	e := newEnv(t, tokens, nil)
	base := e.srv.URL
	c := webClient(t)
	var code int
	var page string
	var h http.Header
	for range api.AuthFailureBurst + 1 {
		_, page, _ = webGet(t, c, base+"/ui/login")
		code, page, h = webPost(t, c, base+"/ui/login", url.Values{"csrf": {csrfField.FindStringSubmatch(page)[1]}, "token": {triggerSecret}, "next": {"/ui/findings"}}, nil)
	}
	want := `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Log in · patrold</title>
<link rel="stylesheet" href="/ui/style.css">
</head>
<body>
<header>
<nav><a href="/ui/findings">Findings</a> <a href="/ui/runs">Runs</a> <a href="/ui/approvals">Approvals</a> <a href="/ui/silences">Silences</a></nav>

</header>
<main>
<h1>Log in</h1>
<p class="flash" id="flash">Token &#34;am&#34; has scope trigger: it may only call the hooks, not open these pages.</p>

<form id="login" method="post" action="/ui/login">
<input type="hidden" name="csrf" value="X">
<input type="hidden" name="next" value="/ui/findings">
<label>API token <input type="password" name="token" autocomplete="current-password" required></label>
<button type="submit">Log in</button>
</form>
</main>
</body>
</html>

`
	if got := csrfValue.ReplaceAllString(page, `name="csrf" value="X"`); code != http.StatusForbidden || got != want || sessionSet(h) {
		t.Fatalf("trigger login: %d %v\n%s\nwant\n%s", code, h, got, want)
	}
	for _, p := range webPages(e) {
		for _, hdr := range []map[string]string{nil, {"Authorization": "Bearer " + triggerSecret}} {
			req, _ := http.NewRequest("GET", base+p, nil)
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			loc := "/ui/login?next=" + url.QueryEscape(p)
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != loc {
				t.Errorf("GET %s as the trigger token (%v): %d %v", p, hdr, resp.StatusCode, resp.Header)
			}
		}
	}
	if code, body, _ := webPost(t, c, base+"/ui/approvals/a1/approve", url.Values{"csrf": {"x"}}, nil); code != http.StatusForbidden || body != "cross-site or stale form refused\n" {
		t.Errorf("a decision without a session: %d %q", code, body)
	}
	// The trigger logins were not counted as guesses.
	_, page, _ = webGet(t, c, base+"/ui/login")
	code, _, h = webPost(t, c, base+"/ui/login", url.Values{"csrf": {csrfField.FindStringSubmatch(page)[1]}, "token": {readSecret}}, nil)
	if code != http.StatusSeeOther || !sessionSet(h) {
		t.Fatalf("a read login after the refused trigger logins: %d %v", code, h)
	}
	// The hooks still take it.
	if got := call(t, c, "POST", base+"/api/v1/hooks/alertmanager", triggerSecret); got.Status == http.StatusUnauthorized || got.Status == http.StatusForbidden || got.Status == http.StatusTooManyRequests {
		t.Errorf("the hook refused the trigger token: %+v", got)
	}
}

// TestWebApprovalsShowWhatTheAPIShows is the approver's attack: the
// model's reason calls the write harmless. The page must show what will
// run, as GET /api/v1/approvals does: the declared description, command
// and risk, the target and the live condition, the model's words
// labelled. The row is rebuilt from the API's answer for the same
// approval and compared whole.
func TestWebApprovalsShowWhatTheAPIShows(t *testing.T) {
	var asst *assistant.Assistant
	e := newEnv(t, testTokens, func(o *api.Options) {
		var err error
		asst, err = assistant.New(assistant.Options{
			Store: o.Store.(*store.Store), Source: func() snapshot.Source { return nil }, Thresholds: func() signals.Thresholds { return nil },
			Autonomy: func() findings.Autonomy { return findings.AutonomyApproval },
			Actions: []assistant.ActionSpec{{Name: "restart_guest", Description: `Stop & start the guest <b>"hard"</b>`,
				Command: []string{"true", "--guest", assistant.PlaceholderResourceID}, Risk: "high", Kinds: []string{"vm"}, Signals: []string{"*"}}},
			Now: o.Now,
		})
		if err != nil {
			t.Fatal(err)
		}
		o.Approvals = asst
	})
	ctx := context.Background()
	ids := []string{findings.NewID(e.now), findings.NewID(e.now.Add(time.Millisecond))}
	for i, c := range []struct{ action, finding string }{{"restart_guest", e.ids["mem"]}, {"wipe_disk", "01JNQ4X2GONEGONEGONEGONEGO"}} {
		if err := e.store.InsertApproval(ctx, records.ApprovalRecord{ID: ids[i], FindingID: c.finding, SessionID: "s" + ids[i], Attempt: 1,
			ResourceID: "vm/101", Action: c.action, Args: []byte(`{}`), Risk: "low", State: "pending", CreatedAt: e.now,
			ExpiresAt: e.now.Add(time.Hour), StartedAt: e.now, Reason: prompt.Safe("harmless cache cleanup, 'safe'", 280)}); err != nil {
			t.Fatal(err)
		}
	}
	code, out, _ := e.do("GET", "/api/v1/approvals", readSecret, "")
	raw, _ := json.Marshal(out["approvals"])
	var views []assistant.ApprovalView
	if err := json.Unmarshal(raw, &views); code != 200 || err != nil || len(views) != 2 {
		t.Fatalf("API approvals: %d %v %s", code, err, raw)
	}
	c := webClient(t)
	login(t, c, e.srv.URL, readSecret)
	_, page, _ := webGet(t, c, e.srv.URL+"/ui/approvals")
	esc := html.EscapeString
	for _, v := range views {
		desc := esc(v.Declared.Description)
		if v.Declared.Missing {
			desc = "(no longer declared: the approval cannot run)"
		}
		cond := "(the finding is gone)"
		if k := v.Condition; k != nil {
			cond = fmt.Sprintf(`%s %s %s (%s): <a href="/ui/findings/%s">%s</a>`, k.Status, k.Severity, esc(k.Key), k.Source, v.FindingID, esc(k.Title))
		}
		want := fmt.Sprintf(`<tr class="approval" data-id="%s"><td><b>%s</b>: %s</td><td><code>%s</code></td><td>%s</td>
<td>%s %s</td>
<td>%s</td>
<td>%s</td><td><time datetime="%s" title="%s">in 1 h</time></td>
<td>admin only</td></tr>`, v.ID, esc(v.Action), desc, esc(strings.Join(v.Declared.Command, " ")), v.Declared.Risk,
			esc(v.Target.Kind), esc(v.Target.ID), cond, esc(v.Reason.String()), v.ExpiresAt.UTC().Format(time.RFC3339), v.ExpiresAt.UTC().Format("2006-01-02 15:04:05Z"))
		if !strings.Contains(page, want) {
			t.Errorf("approval %s: the page does not show\n%s\npage:\n%s", v.ID, want, page)
		}
	}
	// What the API said, so the comparison above is not vacuous.
	if v := views[0]; v.Declared.Description != `Stop & start the guest <b>"hard"</b>` || v.Declared.Risk != assistant.RiskHigh ||
		strings.Join(v.Declared.Command, " ") != "true --guest {resource_id}" || v.Condition == nil || v.Condition.Title != "Memory high" ||
		v.Target != (assistant.ApprovalTarget{Kind: "vm", ID: "vm/101"}) || !views[1].Declared.Missing || views[1].Condition != nil {
		t.Fatalf("API views: %s", raw)
	}
}

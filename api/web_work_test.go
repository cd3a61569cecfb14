package api_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store/records"
)

var flashText = regexp.MustCompile(`<p class="flash" id="flash">([^<]*)</p>`)

// flashAfter follows a form's redirect and returns the page's flash.
func flashAfter(t *testing.T, c *http.Client, base string, code int, h http.Header) string {
	t.Helper()
	if code != http.StatusSeeOther {
		t.Fatalf("form answered %d, want 303", code)
	}
	_, page, _ := webGet(t, c, base+h.Get("Location"))
	m := flashText.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no flash on %s:\n%s", h.Get("Location"), page)
	}
	return html.UnescapeString(m[1])
}

// lastAudit is the newest audit row, its time and remote address blanked.
func lastAudit(t *testing.T, e *env) records.AuditEvent {
	t.Helper()
	evs, err := e.store.AuditEvents(context.Background(), 1)
	if err != nil || len(evs) != 1 {
		t.Fatalf("audit: %v %v", evs, err)
	}
	ev := evs[0]
	ev.At, ev.RemoteAddr = time.Time{}, ""
	return ev
}

// TestWebFormsAct: the finding page's actions and the silence forms go
// through the API's own code. What they store, the audit row they write
// and the message of a refusal are the API's. Forms need an admin
// session, its CSRF token and a same-origin browser.
func TestWebFormsAct(t *testing.T) {
	e := newEnv(t, testTokens, nil)
	base := e.srv.URL
	id := e.ids["mem"]
	c := webClient(t)
	csrf := login(t, c, base, adminSecret)
	post := func(path string, form url.Values) (int, string, http.Header) {
		form.Set("csrf", csrf)
		return webPost(t, c, base+path, form, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": base})
	}

	// Acknowledge: stored with the session's token name, audited.
	code, _, h := post("/ui/findings/"+id+"/ack", url.Values{})
	if got := flashAfter(t, c, base, code, h); got != "finding "+id+": acknowledged" {
		t.Fatalf("ack flash %q", got)
	}
	if f := e.finding("mem"); f.AcknowledgedAt == nil || !f.AcknowledgedAt.Equal(e.now) {
		t.Fatalf("ack not stored: %+v", f.Operator)
	}
	want := records.AuditEvent{TokenName: "ops", TokenID: api.TokenID(adminSecret), Method: "POST", Path: "/ui/findings/" + id + "/ack",
		Route: "web_finding_action", TargetKind: "finding", TargetID: id, Action: "ack", Status: http.StatusSeeOther}
	if got := lastAudit(t, e); got != want {
		t.Fatalf("audit\n%+v\nwant\n%+v", got, want)
	}
	_, page, _ := webGet(t, c, base+"/ui/findings/"+id)
	if !strings.Contains(page, `<dd id="state">detected <span class="badge badge-acked">acked</span></dd>`) {
		t.Fatalf("the finding page does not show it acked:\n%s", page)
	}

	// A refused snooze: the flash carries the API's own message.
	_, apiOut, _ := e.do("POST", "/api/v1/findings/"+id+"/snooze", adminSecret, `{"for":"10m"}`)
	code, _, h = post("/ui/findings/"+id+"/snooze", url.Values{"for": {"10m"}})
	if got := flashAfter(t, c, base, code, h); got != "finding "+id+": "+apiOut["message"].(string) {
		t.Fatalf("snooze 10m flash %q, the API says %q", got, apiOut["message"])
	}
	if got := lastAudit(t, e); got.Route != "web_finding_action" || got.Action != "snooze" || got.ErrorCode != string(api.CodeInvalidRequest) {
		t.Fatalf("refused snooze audit %+v", got)
	}
	// A field the action does not take is refused as the API refuses it.
	_, apiOut, _ = e.do("POST", "/api/v1/findings/"+id+"/ack", adminSecret, `{"note":"x"}`)
	code, _, h = post("/ui/findings/"+id+"/ack", url.Values{"note": {"x"}})
	if got := flashAfter(t, c, base, code, h); got != "finding "+id+": "+apiOut["message"].(string) {
		t.Fatalf("ack with a note: flash %q, the API says %q", got, apiOut["message"])
	}
	code, _, h = post("/ui/findings/"+id+"/dismiss", url.Values{"reason": {findings.DismissExpectedBehavior}})
	if got := flashAfter(t, c, base, code, h); got != "finding "+id+": dismissed" || e.finding("mem").DismissedReason != findings.DismissExpectedBehavior {
		t.Fatalf("dismiss: %q %+v", got, e.finding("mem").Operator)
	}

	// A silence from the finding page: stored as the API stores it.
	code, _, h = post("/ui/silences", url.Values{"resource": {"vm/101"}, "signal_type": {"high_memory"}, "duration": {"2h"}, "comment": {"maintenance"},
		"tags": {""}, "kind": {""}, "next": {"/ui/findings/" + id}})
	flash := flashAfter(t, c, base, code, h)
	sils, err := e.store.Silences(context.Background(), e.now, true)
	if err != nil || len(sils) != 1 {
		t.Fatalf("silences %v %v", sils, err)
	}
	wantSil := findings.Silence{ID: sils[0].ID, Matchers: findings.Matchers{Resource: "vm/101", SignalType: "high_memory"}, Comment: "maintenance",
		Author: "ops", StartsAt: e.now, EndsAt: e.now.Add(2 * time.Hour), CreatedAt: e.now}
	if !sameSilence(sils[0], wantSil) || flash != "silence "+sils[0].ID+": in force until 2026-11-29 12:00:00Z" {
		t.Fatalf("silence %+v (flash %q)\nwant %+v", sils[0], flash, wantSil)
	}
	_, page, _ = webGet(t, c, base+"/ui/silences")
	if !strings.Contains(page, `<tr class="silence" data-id="`+sils[0].ID+`">`) || !strings.Contains(page, `resource vm/101 signal high_memory`) ||
		!strings.Contains(page, `action="/ui/silences/`+sils[0].ID+`/expire"`) {
		t.Fatalf("silences page:\n%s", page)
	}
	// A refused silence: the API's message, back on the page it came from.
	body := `{"matchers":{"resource":"vm/[1]"},"comment":"x","duration":"2h"}`
	_, apiOut, _ = e.do("POST", "/api/v1/silences", adminSecret, body)
	code, _, h = post("/ui/silences", url.Values{"resource": {"vm/[1]"}, "duration": {"2h"}, "comment": {"x"}, "next": {"/ui/findings/" + id}})
	if h.Get("Location") != "/ui/findings/"+id {
		t.Fatalf("refused silence went to %q", h.Get("Location"))
	}
	if got := flashAfter(t, c, base, code, h); got != "silence: "+apiOut["message"].(string) {
		t.Fatalf("bad glob flash %q, the API says %q", got, apiOut["message"])
	}
	// Expire it.
	code, _, h = post("/ui/silences/"+sils[0].ID+"/expire", url.Values{})
	if got := flashAfter(t, c, base, code, h); got != "silence "+sils[0].ID+": expired" {
		t.Fatalf("expire flash %q", got)
	}
	if sils, _ := e.store.Silences(context.Background(), e.now, true); len(sils) != 0 {
		t.Fatalf("still in force: %+v", sils)
	}
	want = records.AuditEvent{TokenName: "ops", TokenID: api.TokenID(adminSecret), Method: "POST", Path: "/ui/silences/" + wantSil.ID + "/expire",
		Route: "web_silence_expire", TargetKind: "silence", TargetID: wantSil.ID, Action: "expire", Status: http.StatusSeeOther}
	if got := lastAudit(t, e); got != want {
		t.Fatalf("expire audit\n%+v\nwant\n%+v", got, want)
	}

	// A read session sees no forms and cannot post them (audited 403).
	r := webClient(t)
	rcsrf := login(t, r, base, readSecret)
	_, page, _ = webGet(t, r, base+"/ui/findings/"+e.ids["cpu"])
	if strings.Contains(page, `class="ack"`) || !strings.Contains(page, `<p id="act-note">`) {
		t.Fatalf("a read session is offered the actions:\n%s", page)
	}
	if code, body, _ := webPost(t, r, base+"/ui/findings/"+e.ids["cpu"]+"/ack", url.Values{"csrf": {rcsrf}}, nil); code != http.StatusForbidden ||
		body != "this form needs an admin token\n" || e.finding("cpu").AcknowledgedAt != nil {
		t.Fatalf("a read session acked: %d %q", code, body)
	}
	if got := lastAudit(t, e); got.TokenName != "dash" || got.Status != http.StatusForbidden || got.Route != "web_finding_action" {
		t.Fatalf("read session audit %+v", got)
	}
	// No CSRF token, or another site: refused, nothing stored.
	for name, hdr := range map[string]map[string]string{"no csrf": nil, "cross-site": {"Sec-Fetch-Site": "cross-site"}} {
		form := url.Values{}
		if hdr != nil {
			form.Set("csrf", csrf)
		}
		if code, body, _ := webPost(t, c, base+"/ui/findings/"+e.ids["cpu"]+"/ack", form, hdr); code != http.StatusForbidden || body != "cross-site or stale form refused\n" {
			t.Errorf("%s: %d %q", name, code, body)
		}
	}
	if e.finding("cpu").AcknowledgedAt != nil {
		t.Fatal("a refused form acked")
	}
}

func sameSilence(a, b findings.Silence) bool {
	return a.ID == b.ID && a.Matchers.Resource == b.Matchers.Resource && a.Matchers.SignalType == b.Matchers.SignalType &&
		a.Matchers.Kind == b.Matchers.Kind && a.Matchers.Category == b.Matchers.Category && len(a.Matchers.Tags) == len(b.Matchers.Tags) &&
		a.Comment == b.Comment && a.Author == b.Author && a.StartsAt.Equal(b.StartsAt) && a.EndsAt.Equal(b.EndsAt) && a.CreatedAt.Equal(b.CreatedAt)
}

var rowKey = regexp.MustCompile(`<tr class="finding sev-[a-z]+">\n<td>[a-z]+</td><td class="state">[^<]*(?:<span[^>]*>[a-z]+</span>)*</td><td>([a-z_]+)</td>`)

// TestWebListFilters: the list filters by state, severity, kind and
// text and sorts; a bad value is refused naming the parameter.
func TestWebListFilters(t *testing.T) {
	e := newEnv(t, nil, nil)
	c := webClient(t)
	keys := func(q string) string {
		t.Helper()
		code, page, _ := webGet(t, c, e.srv.URL+"/ui/findings"+q)
		if code != http.StatusOK {
			t.Fatalf("%s: %d\n%s", q, code, page)
		}
		var out []string
		for _, m := range rowKey.FindAllStringSubmatch(page, -1) {
			out = append(out, m[1])
		}
		return strings.Join(out, " ")
	}
	for q, want := range map[string]string{
		"?sort=key":                             "backup_stale high_cpu high_disk high_memory smart_failure",
		"?severity=critical&sort=key":           "high_disk smart_failure",
		"?kind=vm&sort=key":                     "backup_stale high_memory",
		"?q=MEMORY":                             "high_memory",
		"?q=pve1&sort=resource":                 "smart_failure high_cpu high_disk",
		"?state=resolved":                       "",
		"?state=all&kind=node&severity=warning": "high_cpu",
	} {
		if got := keys(q); got != want {
			t.Errorf("%s: %q, want %q", q, got, want)
		}
	}
	for q, want := range map[string]string{
		"?sort=size":     `sort: "size" is not one of severity, last_seen, detected, resource, key`,
		"?severity=loud": `severity: "loud" is not one of info, watch, warning, critical`,
		"?page=0":        `page: "0" is not a positive integer`,
		"?color=red":     `color: unknown query parameter (accepted: state, severity, kind, q, sort, page)`,
		"?q=a%00b":       `q: contains a control character`,
	} {
		code, body, _ := webGet(t, c, e.srv.URL+"/ui/findings"+q)
		if code != http.StatusBadRequest || !strings.Contains(body, want) {
			t.Errorf("%s: %d %q, want 400 %q", q, code, body, want)
		}
	}
}

package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/findings"
)

func act(e *env, name, action, body string) (int, map[string]any) {
	e.t.Helper()
	got, out, _ := e.do("POST", "/api/v1/findings/"+e.ids[name]+"/"+action, adminSecret, body)
	return got, out
}

func TestActionsChangeStore(t *testing.T) {
	e := newEnv(t, testTokens, nil)

	if got, out := act(e, "cpu", "ack", ""); got != 200 || out["acknowledged_at"] == nil {
		t.Fatalf("ack: %d %v", got, out)
	}
	if f := e.finding("cpu"); f.AcknowledgedAt == nil || !f.AcknowledgedAt.Equal(e.now) {
		t.Fatalf("ack not stored: %+v", f.Operator)
	}

	got, out := act(e, "mem", "snooze", `{"for":"4h"}`)
	if got != 200 || out["state"] != findings.StateSnoozed {
		t.Fatalf("snooze: %d %v", got, out)
	}
	if f := e.finding("mem"); f.SnoozedUntil == nil || !f.SnoozedUntil.Equal(e.now.Add(4*time.Hour)) {
		t.Fatalf("snooze not stored as now+4h: %+v", f.Operator)
	}

	for _, reason := range []string{findings.DismissNotAnIssue, findings.DismissExpectedBehavior, findings.DismissWillFixLater} {
		got, out := act(e, "backup", "dismiss", `{"reason":"`+reason+`"}`)
		if got != 200 || out["state"] != findings.StateDismissed {
			t.Fatalf("dismiss %s: %d %v", reason, got, out)
		}
		if f := e.finding("backup"); f.DismissedReason != reason {
			t.Fatalf("dismiss %s stored %q", reason, f.DismissedReason)
		}
		if got, out := act(e, "backup", "undismiss", "{}"); got != 200 {
			t.Fatalf("undismiss: %d %v", got, out)
		}
		if f := e.finding("backup"); f.DismissedReason != "" {
			t.Fatalf("undismiss not stored: %q", f.DismissedReason)
		}
	}

	if got, out := act(e, "smart", "suppress", ""); got != 200 || out["state"] != findings.StateSuppressed {
		t.Fatalf("suppress: %d %v", got, out)
	}
	if f := e.finding("smart"); !f.Suppressed {
		t.Fatal("suppress not stored")
	}
	if got, _ := act(e, "smart", "unsuppress", ""); got != 200 || e.finding("smart").Suppressed {
		t.Fatalf("unsuppress: %d", got)
	}

	if got, out := act(e, "disk", "resolve", `{"note":"grew the pool"}`); got != 200 || out["state"] != findings.StateResolved {
		t.Fatalf("resolve: %d %v", got, out)
	}
	if f := e.finding("disk"); f.Active() || f.ResolveNote != "grew the pool" {
		t.Fatalf("resolve not stored: status %s note %q", f.Status, f.ResolveNote)
	}

	// The lifecycle events name the token as the actor.
	_, detail, _ := e.do("GET", "/api/v1/findings/"+e.ids["cpu"], readSecret, "")
	events, _ := detail["events"].([]any)
	found := false
	for _, ev := range events {
		m := ev.(map[string]any)
		found = found || (m["kind"] == "acknowledged" && strings.Contains(m["detail"].(string), "by ops"))
	}
	if !found || detail["finding"].(map[string]any)["state"] != findings.StateDetected {
		t.Fatalf("finding detail lacks the ack event by ops: %v", detail)
	}
	if _, ok := detail["investigations"].([]any); !ok {
		t.Fatalf("finding detail has no investigations array: %v", detail)
	}
}

func TestActionBadInput(t *testing.T) {
	e := newEnv(t, testTokens, func(o *api.Options) { o.MaxBodyBytes = 256 })
	cases := []struct {
		name, action, body, field string
	}{
		{"cpu", "snooze", `{"for":"30m"}`, "for"},
		{"cpu", "snooze", `{"for":"169h"}`, "for"},
		{"cpu", "snooze", `{"for":"-4h"}`, "for"},
		{"cpu", "snooze", `{"for":"four hours"}`, "for"},
		{"cpu", "snooze", `{"for":4}`, "for"},
		{"cpu", "snooze", ``, "for"},
		{"cpu", "snooze", `{"for":"4h","until":"x"}`, "until"},
		{"cpu", "dismiss", `{"reason":"meh"}`, "reason"},
		{"cpu", "dismiss", `{}`, "reason"},
		{"cpu", "resolve", `{}`, "note"},
		{"cpu", "resolve", `{"note":"   "}`, "note"},
		{"cpu", "ack", `{"note":"x"}`, "note"},
		{"cpu", "ack", `{"unknown":1}`, "unknown"},
		{"cpu", "suppress", `[]`, "body"},
		{"cpu", "snooze", `{"for":"4h"} {"for":"5h"}`, "body"},
		{"cpu", "snooze", `{"for":"4h"`, "body"},
		{"cpu", "resolve", `{"note":"` + strings.Repeat("x", 300) + `"}`, "body"},
	}
	for _, c := range cases {
		status := http.StatusBadRequest
		if strings.Contains(c.body, strings.Repeat("x", 300)) {
			status = http.StatusRequestEntityTooLarge
		}
		out := e.expectError("POST", "/api/v1/findings/"+e.ids[c.name]+"/"+c.action, adminSecret, c.body, status, api.CodeInvalidRequest, c.field)
		if status == http.StatusRequestEntityTooLarge && out["details"].(map[string]any)["limit_bytes"] != float64(256) {
			t.Errorf("413 does not carry the limit: %v", out)
		}
	}
	assertUntouched(t, e)

	e.expectError("POST", "/api/v1/findings/0000000000000000/ack", adminSecret, "", http.StatusNotFound, api.CodeFindingNotFound, "")
	e.expectError("POST", "/api/v1/findings/"+e.ids["cpu"]+"/explode", adminSecret, "", http.StatusNotFound, api.CodeNotFound, "")
	e.expectError("GET", "/api/v1/findings/0000000000000000", readSecret, "", http.StatusNotFound, api.CodeFindingNotFound, "")

	// Wrong state: 409.
	e.expectError("POST", "/api/v1/findings/"+e.ids["cpu"]+"/undismiss", adminSecret, "", http.StatusConflict, api.CodeFindingActionNotAllowed, "")
	e.expectError("POST", "/api/v1/findings/"+e.ids["cpu"]+"/unsuppress", adminSecret, "", http.StatusConflict, api.CodeFindingActionNotAllowed, "")
	if got, _ := act(e, "cpu", "resolve", `{"note":"done"}`); got != 200 {
		t.Fatal("resolve failed")
	}
	for _, c := range []struct{ action, body string }{{"ack", ""}, {"snooze", `{"for":"4h"}`}, {"resolve", `{"note":"again"}`}, {"dismiss", `{"reason":"not_an_issue"}`}} {
		e.expectError("POST", "/api/v1/findings/"+e.ids["cpu"]+"/"+c.action, adminSecret, c.body, http.StatusConflict, api.CodeFindingActionNotAllowed, "")
	}
}

func TestListFindingsFilters(t *testing.T) {
	e := newEnv(t, nil, nil)
	count := func(q string) int {
		t.Helper()
		got, out, _ := e.do("GET", "/api/v1/findings"+q, "", "")
		if got != 200 {
			t.Fatalf("GET %s: %d %v", q, got, out)
		}
		list := out["findings"].([]any)
		if int(out["count"].(float64)) != len(list) {
			t.Fatalf("count %v != %d", out["count"], len(list))
		}
		return len(list)
	}
	if n := count(""); n != 5 {
		t.Fatalf("active findings = %d, want 5", n)
	}
	if got, _ := act(e, "cpu", "resolve", `{"note":"ok"}`); got != http.StatusUnauthorized {
		t.Fatalf("resolve without configured tokens: %d", got)
	}
	if _, err := e.store.Act(t.Context(), e.ids["cpu"], findings.ActionRequest{Action: findings.ActionResolve, Note: "ok"}, e.now); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]int{
		"": 4, "?state=active": 4, "?state=resolved": 1, "?state=all": 5,
		"?severity=critical": 2, "?state=all&severity=warning": 3,
		"?resource=vm/101": 1, "?resource=vm/999": 0,
	} {
		if n := count(q); n != want {
			t.Errorf("GET /api/v1/findings%s: %d findings, want %d", q, n, want)
		}
	}
	_, out, _ := e.do("GET", "/api/v1/findings?severity=critical", "", "")
	first := out["findings"].([]any)[0].(map[string]any)
	if first["state"] != findings.StateDetected || first["severity"] != "critical" {
		t.Fatalf("list item lacks state or severity: %v", first)
	}
	for q, field := range map[string]string{
		"?state=open":                           "state",
		"?severity=bad":                         "severity",
		"?sort=asc":                             "sort",
		"?state=all&state=active":               "state",
		"?resource=" + "%01":                    "resource",
		"?resource=" + strings.Repeat("x", 300): "resource",
	} {
		e.expectError("GET", "/api/v1/findings"+q, "", "", http.StatusBadRequest, api.CodeInvalidRequest, field)
	}
}

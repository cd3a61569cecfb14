package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/patrold/patrold/api"
)

func TestTriggerRunThenBusy(t *testing.T) {
	e := newEnv(t, testTokens, nil)
	got, out, _ := e.do("POST", "/api/v1/runs", adminSecret, "")
	if got != http.StatusAccepted || out["run_id"] != "run-1" {
		t.Fatalf("trigger: %d %v, want 202 run-1", got, out)
	}
	e.daemon.mu.Lock()
	e.daemon.busy = "run-1"
	e.daemon.mu.Unlock()
	out = e.expectError("POST", "/api/v1/runs", adminSecret, "{}", http.StatusConflict, api.CodePatrolAlreadyRunning, "")
	if out["current_run_id"] != "run-1" || out["details"].(map[string]any)["current_run_id"] != "run-1" {
		t.Fatalf("409 lacks current_run_id at top level and in details: %v", out)
	}
	if n, _ := e.daemon.counts(); n != 1 {
		t.Fatalf("daemon admitted %d runs, want 1", n)
	}
	e.expectError("POST", "/api/v1/runs", adminSecret, `{"trigger":"x"}`, http.StatusBadRequest, api.CodeInvalidRequest, "trigger")
}

// TestTriggerScopedRun: a body naming resources starts a scoped run with
// its reason; an unfit body is refused naming the field, and starts
// nothing.
func TestTriggerScopedRun(t *testing.T) {
	e := newEnv(t, testTokens, nil)
	got, out, _ := e.do("POST", "/api/v1/runs", adminSecret, `{"resources":["vm/101","node/pve1"],"reason":"alert HostDown"}`)
	if got != http.StatusAccepted || out["run_id"] != "run-1" {
		t.Fatalf("scoped trigger: %d %v", got, out)
	}
	for _, c := range []struct{ body, field string }{
		{`{"resources":[]}`, "resources"},
		{`{"reason":"why"}`, "resources"},
		{`{"resources":["vm/1",""]}`, "resources[1]"},
		{`{"resources":["vm/1\u0007"]}`, "resources[0]"},
		{`{"resources":["vm/1"],"reason":"a\nb"}`, "reason"},
		{`{"resources":"vm/1"}`, "resources"},
		{`{"resources":["vm/1"],"trigger":"x"}`, "trigger"},
	} {
		e.expectError("POST", "/api/v1/runs", adminSecret, c.body, http.StatusBadRequest, api.CodeInvalidRequest, c.field)
	}
	e.daemon.mu.Lock()
	defer e.daemon.mu.Unlock()
	if want := []string{`run-1 ["vm/101" "node/pve1"] "alert HostDown"`}; !slices.Equal(e.daemon.scoped, want) || len(e.daemon.triggered) != 1 {
		t.Fatalf("scoped runs %q (triggered %v), want %q", e.daemon.scoped, e.daemon.triggered, want)
	}
}

func TestRunsListAndReport(t *testing.T) {
	e := newEnv(t, nil, nil)
	got, out, _ := e.do("GET", "/api/v1/runs", "", "")
	runs, _ := out["runs"].([]any)
	if got != 200 || len(runs) != 1 {
		t.Fatalf("runs: %d %v", got, out)
	}
	r := runs[0].(map[string]any)
	if r["run_id"] != e.runID || r["status"] != "critical" || r["report"] != nil {
		t.Fatalf("run record: %v", r)
	}
	got, out, _ = e.do("GET", "/api/v1/runs/"+e.runID, "", "")
	if got != 200 || out["run_id"] != e.runID || out["findings"] != float64(5) {
		t.Fatalf("run report: %d %v", got, out)
	}
	e.expectError("GET", "/api/v1/runs/nope", "", "", http.StatusNotFound, api.CodeNotFound, "")
	for _, q := range []string{"?limit=0", "?limit=x", "?limit=1001", "?limit=1&limit=2"} {
		e.expectError("GET", "/api/v1/runs"+q, "", "", http.StatusBadRequest, api.CodeInvalidRequest, "limit")
	}
	if got, _, _ := e.do("GET", "/api/v1/runs?limit=1000", "", ""); got != 200 {
		t.Fatalf("limit=1000: %d", got)
	}
}

func TestSilences(t *testing.T) {
	e := newEnv(t, testTokens, nil)
	got, out, _ := e.do("POST", "/api/v1/silences", adminSecret, `{"matchers":{"resource":"vm/*","category":"backup"},"comment":"maintenance","duration":"2h"}`)
	if got != 200 || out["id"] == "" || out["author"] != "ops" {
		t.Fatalf("add silence: %d %v", got, out)
	}
	id := out["id"].(string)
	if out["ends_at"] != "2026-11-29T12:00:00Z" {
		t.Fatalf("ends_at = %v, want now+2h", out["ends_at"])
	}
	got, out, _ = e.do("POST", "/api/v1/silences", adminSecret, `{"matchers":{"kind":"node"},"comment":"c","author":"alice","starts_at":"2026-11-29T11:00:00Z","ends_at":"2026-11-30T11:00:00Z"}`)
	if got != 200 || out["author"] != "alice" {
		t.Fatalf("add silence with ends_at: %d %v", got, out)
	}
	_, out, _ = e.do("GET", "/api/v1/silences", readSecret, "")
	if n := len(out["silences"].([]any)); n != 2 {
		t.Fatalf("silences = %d, want 2", n)
	}
	_, out, _ = e.do("GET", "/api/v1/silences?active=true", readSecret, "")
	if n := len(out["silences"].([]any)); n != 1 {
		t.Fatalf("active silences = %d, want 1 (the other starts later)", n)
	}
	if got, out, _ := e.do("DELETE", "/api/v1/silences/"+id, adminSecret, ""); got != 200 || out["id"] != id {
		t.Fatalf("expire: %d %v", got, out)
	}
	if active, _ := e.store.Silences(t.Context(), e.now, true); len(active) != 0 {
		t.Fatalf("silence still active after DELETE: %v", active)
	}
	e.expectError("DELETE", "/api/v1/silences/"+id, adminSecret, "", http.StatusNotFound, api.CodeNotFound, "")
	e.expectError("GET", "/api/v1/silences?active=yes", readSecret, "", http.StatusBadRequest, api.CodeInvalidRequest, "active")

	for body, field := range map[string]string{
		``:                                "body",
		`{"comment":"c","duration":"2h"}`: "matchers",
		`{"matchers":{"kind":"vm","x":1},"comment":"c","duration":"2h"}`:                                               "matchers.x",
		`{"matchers":{"kind":"robot"},"comment":"c","duration":"2h"}`:                                                  "matchers.kind",
		`{"matchers":{"kind":"vm"},"duration":"2h"}`:                                                                   "comment",
		`{"matchers":{"kind":"vm"},"comment":"c"}`:                                                                     "ends_at",
		`{"matchers":{"kind":"vm"},"comment":"c","duration":"2h","ends_at":"2026-11-30T00:00:00Z"}`:                    "duration",
		`{"matchers":{"kind":"vm"},"comment":"c","duration":"soon"}`:                                                   "duration",
		`{"matchers":{"kind":"vm"},"comment":"c","duration":"-1h"}`:                                                    "duration",
		`{"matchers":{"kind":"vm"},"comment":"c","duration":"9999h"}`:                                                  "duration",
		`{"matchers":{"kind":"vm"},"comment":"c","ends_at":"tomorrow"}`:                                                "ends_at",
		`{"matchers":{"kind":"vm"},"comment":"c","ends_at":"2026-11-29T09:00:00Z"}`:                                    "ends_at",
		`{"matchers":{"kind":"vm"},"comment":"c","starts_at":5,"duration":"1h"}`:                                       "starts_at",
		`{"matchers":{"tags":"prod"},"comment":"c","duration":"1h"}`:                                                   "matchers.tags",
		`{"matchers":{"kind":"vm"},"comment":"c","starts_at":"1970-01-01T00:00:00Z","duration":"1h"}`:                  "starts_at",
		`{"matchers":{"kind":"vm"},"comment":"c","starts_at":"0001-01-01T00:00:00Z","duration":"1h"}`:                  "starts_at",
		`{"matchers":{"kind":"vm"},"comment":"c","starts_at":"9999-12-31T23:30:00Z","duration":"1h"}`:                  "starts_at",
		`{"matchers":{"kind":"vm"},"comment":"c","starts_at":"2026-11-28T08:00:00Z","duration":"1h"}`:                  "starts_at",
		`{"matchers":{"kind":"vm"},"comment":"c","starts_at":"2026-11-29T08:00:00Z","ends_at":"2026-11-29T09:00:00Z"}`: "ends_at",
	} {
		out := e.expectError("POST", "/api/v1/silences", adminSecret, body, http.StatusBadRequest, api.CodeInvalidRequest, field)
		if !strings.Contains(out["message"].(string), field) {
			t.Errorf("message %q does not name %s", out["message"], field)
		}
	}
}

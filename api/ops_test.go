package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/findings"
)

func TestHealthReadyReloadStatus(t *testing.T) {
	e := newEnv(t, testTokens, nil)
	if got, out, _ := e.do("GET", "/healthz", "", ""); got != 200 || out["status"] != "ok" {
		t.Fatalf("healthz: %d %v", got, out)
	}
	if got, out, _ := e.do("GET", "/readyz", "", ""); got != 200 || out["status"] != "ready" {
		t.Fatalf("readyz: %d %v", got, out)
	}
	e.daemon.mu.Lock()
	e.daemon.readyErr = errors.New("store not open")
	e.daemon.reloadErr = errors.New("schedule.cron: bad")
	e.daemon.mu.Unlock()
	out := e.expectError("GET", "/readyz", "", "", http.StatusServiceUnavailable, api.CodeNotReady, "")
	if !strings.Contains(out["message"].(string), "store not open") {
		t.Fatalf("readyz message: %v", out)
	}
	if got, _, _ := e.do("GET", "/healthz", "", ""); got != 200 {
		t.Fatalf("healthz while not ready: %d, want 200", got)
	}
	out = e.expectError("POST", "/-/reload", adminSecret, "", http.StatusInternalServerError, api.CodeReloadFailed, "")
	if !strings.Contains(out["message"].(string), "schedule.cron") {
		t.Fatalf("reload message: %v", out)
	}
	e.daemon.mu.Lock()
	e.daemon.reloadErr = nil
	e.daemon.mu.Unlock()
	if got, out, _ := e.do("POST", "/-/reload", adminSecret, ""); got != 200 || out["status"] != "reloaded" {
		t.Fatalf("reload: %d %v", got, out)
	}
	if _, n := e.daemon.counts(); n != 2 {
		t.Fatalf("reloads = %d, want 2", n)
	}
	if got, out, _ := e.do("GET", "/api/v1/status", readSecret, ""); got != 200 || out["version"] != "test" {
		t.Fatalf("status: %d %v", got, out)
	}
	_, out, _ = e.do("GET", "/api/v1/agent/capabilities", readSecret, "")
	var want map[string]any
	raw, _ := json.Marshal(api.NewCapabilities())
	if err := json.Unmarshal(raw, &want); err != nil || !reflect.DeepEqual(out, want) {
		t.Fatalf("capabilities:\n got %v\nwant %v", out, want)
	}
}

func TestUnmatchedRoutesAnswerJSON(t *testing.T) {
	e := newEnv(t, testTokens, nil)
	e.expectError("GET", "/api/v1/nothing", readSecret, "", http.StatusNotFound, api.CodeNotFound, "")
	e.expectError("GET", "/nothing", "", "", http.StatusNotFound, api.CodeNotFound, "")
	out := e.expectError("PUT", "/api/v1/findings", adminSecret, "{}", http.StatusMethodNotAllowed, api.CodeMethodNotAllowed, "")
	_, _, h := e.do("PATCH", "/api/v1/silences", adminSecret, "")
	if allow := h.Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "POST") {
		t.Fatalf("405 Allow header = %q (%v)", allow, out)
	}
}

type fakeApprovals struct{ decided []string }

func (f *fakeApprovals) List(context.Context, findings.Page) (any, string, error) {
	return []map[string]string{{"id": "a1", "action": "restart vm/101"}}, "", nil
}

func (f *fakeApprovals) decide(id, actor, what string) (any, error) {
	switch id {
	case "a1":
		f.decided = append(f.decided, what+" "+id+" by "+actor)
		return map[string]string{"id": id, "status": what}, nil
	case "old":
		return nil, fmt.Errorf("approval old: %w", api.ErrApprovalExpired)
	case "done":
		return nil, fmt.Errorf("approval done: %w", api.ErrApprovalDecided)
	}
	return nil, fmt.Errorf("approval %s: %w", id, api.ErrApprovalNotFound)
}

func (f *fakeApprovals) Approve(_ context.Context, id, actor string) (any, error) {
	return f.decide(id, actor, "approved")
}

func (f *fakeApprovals) Deny(_ context.Context, id, actor string) (any, error) {
	return f.decide(id, actor, "denied")
}

func TestApprovals(t *testing.T) {
	e := newEnv(t, testTokens, nil)
	_, out, _ := e.do("GET", "/api/v1/approvals", readSecret, "")
	if list, ok := out["approvals"].([]any); !ok || len(list) != 0 {
		t.Fatalf("approvals without an Approvals: %v, want []", out)
	}
	e.expectError("POST", "/api/v1/approvals/a1/approve", adminSecret, "", http.StatusNotFound, api.CodeApprovalNotFound, "")

	fa := &fakeApprovals{}
	e = newEnv(t, testTokens, func(o *api.Options) { o.Approvals = fa })
	_, out, _ = e.do("GET", "/api/v1/approvals", readSecret, "")
	if list, _ := out["approvals"].([]any); len(list) != 1 {
		t.Fatalf("approvals: %v", out)
	}
	if got, out, _ := e.do("POST", "/api/v1/approvals/a1/approve", adminSecret, ""); got != 200 || out["status"] != "approved" {
		t.Fatalf("approve: %d %v", got, out)
	}
	if got, _, _ := e.do("POST", "/api/v1/approvals/a1/deny", adminSecret, "{}"); got != 200 {
		t.Fatalf("deny: %d", got)
	}
	if strings.Join(fa.decided, ",") != "approved a1 by ops,denied a1 by ops" {
		t.Fatalf("decisions = %v", fa.decided)
	}
	e.expectError("POST", "/api/v1/approvals/zz/approve", adminSecret, "", http.StatusNotFound, api.CodeApprovalNotFound, "")
	e.expectError("POST", "/api/v1/approvals/old/approve", adminSecret, "", http.StatusConflict, api.CodeApprovalExpired, "")
	e.expectError("POST", "/api/v1/approvals/done/deny", adminSecret, "", http.StatusConflict, api.CodeApprovalDecided, "")
	e.expectError("POST", "/api/v1/approvals/a1/maybe", adminSecret, "", http.StatusNotFound, api.CodeNotFound, "")
	e.expectError("POST", "/api/v1/approvals/a1/approve", adminSecret, `{"why":1}`, http.StatusBadRequest, api.CodeInvalidRequest, "why")
}

func TestMetricsEndpoint(t *testing.T) {
	e := newEnv(t, testTokens, nil)
	e.do("GET", "/healthz", "", "")
	e.do("GET", "/api/v1/findings", "", "")
	e.do("GET", "/nowhere", "", "")
	resp, err := e.srv.Client().Get(e.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("/metrics Content-Type = %q, want the Prometheus text format", ct)
	}
	for _, want := range []string{
		"# TYPE patrold_api_requests_total counter",
		`patrold_api_requests_total{code="200",route="healthz"} 1`,
		`patrold_api_requests_total{code="401",route="findings_list"} 1`,
		`patrold_api_requests_total{code="404",route="unmatched"} 1`,
		`patrold_api_requests_total{code="409",route="run_trigger"} 0`,
		"patrold_api_audit_write_failures_total 0",
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// Every route x status label pair is pre-created: 18 routes + unmatched,
	// 11 status codes + "other".
	if n, err := testutil.GatherAndCount(e.reg, "patrold_api_requests_total"); err != nil || n != 19*12 {
		t.Fatalf("pre-created request series = %d (%v), want %d", n, err, 19*12)
	}
}

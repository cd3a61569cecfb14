package api_test

import (
	"context"
	"net/http"
	"reflect"
	"sync"
	"testing"

	"github.com/patrold/patrold/api"
)

const triggerSecret = "trigger-secret-77a1c0de93b2"

// fakeTriggers records what the hook asked for.
type fakeTriggers struct {
	mu   sync.Mutex
	asks []api.HookResult
}

func (f *fakeTriggers) TriggerFromHook(_ context.Context, resources []string, reason string) (api.HookResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asks = append(f.asks, api.HookResult{Outcome: reason, Resources: resources})
	return api.HookResult{Outcome: "taken", RunID: "run-9", Resources: resources}, nil
}

// TestAlertmanagerHook: firing alerts map to resources by label
// (resource_id, then node, then instance's host). Resolved alerts and
// patrold's own (finding_id) are skipped. A trigger token may call the
// hook and nothing else. A payload that is not Alertmanager's is refused
// naming the field.
func TestAlertmanagerHook(t *testing.T) {
	ft := &fakeTriggers{}
	tokens := append(append([]api.Token(nil), testTokens...), api.Token{Name: "am", Secret: triggerSecret, Scope: api.ScopeTrigger})
	e := newEnv(t, tokens, func(o *api.Options) { o.Triggers = ft })
	body := `{"version":"4","status":"firing","alerts":[
	 {"status":"firing","labels":{"alertname":"HostDown","node":"pve2"}},
	 {"status":"firing","labels":{"alertname":"DiskFull","resource_id":"STORAGE/pve1/zfs","node":"pve1"}},
	 {"status":"firing","labels":{"alertname":"Exporter","instance":"pve3:9100"}},
	 {"status":"resolved","labels":{"alertname":"Old","node":"pve4"}},
	 {"status":"firing","labels":{"alertname":"high_cpu","resource_id":"vm/1","finding_id":"0123456789abcdef"}},
	 {"status":"firing","labels":{"alertname":"NoResource","job":"x"}}]}`
	got, out, _ := e.do("POST", "/api/v1/hooks/alertmanager", triggerSecret, body)
	if got != http.StatusOK || out["outcome"] != "taken" || out["run_id"] != "run-9" {
		t.Fatalf("hook: %d %v", got, out)
	}
	want := []api.HookResult{{Outcome: "alertmanager: DiskFull, Exporter, HostDown", Resources: []string{"node/pve2", "storage/pve1/zfs", "node/pve3"}}}
	if !reflect.DeepEqual(ft.asks, want) {
		t.Fatalf("asked %+v, want %+v", ft.asks, want)
	}
	// Nothing named: answered, nothing asked.
	got, out, _ = e.do("POST", "/api/v1/hooks/alertmanager", adminSecret, `{"version":"4","alerts":[{"status":"resolved","labels":{"node":"a"}}]}`)
	if got != http.StatusOK || out["outcome"] != api.HookIgnored || len(ft.asks) != 1 {
		t.Fatalf("nothing named: %d %v (asked %d)", got, out, len(ft.asks))
	}
	e.expectError("POST", "/api/v1/hooks/alertmanager", triggerSecret, `{"version":"3","alerts":[]}`, http.StatusBadRequest, api.CodeInvalidRequest, "version")
	e.expectError("POST", "/api/v1/hooks/alertmanager", triggerSecret, `[1]`, http.StatusBadRequest, api.CodeInvalidRequest, "body")
	e.expectError("POST", "/api/v1/hooks/alertmanager", readSecret, body, http.StatusForbidden, api.CodeForbidden, "")
	e.expectError("POST", "/api/v1/hooks/alertmanager", "", body, http.StatusUnauthorized, api.CodeUnauthorized, "")
	e.expectError("GET", "/api/v1/findings", triggerSecret, "", http.StatusForbidden, api.CodeForbidden, "")
	e.expectError("POST", "/api/v1/runs", triggerSecret, "", http.StatusForbidden, api.CodeForbidden, "")
}

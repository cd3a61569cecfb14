package api_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/patrold/patrold/api"
)

type routeCase struct{ method, path, body string }

// mutatingRoutes lists every POST and DELETE of the API.
func mutatingRoutes(e *env) []routeCase {
	id := e.ids["cpu"]
	return []routeCase{
		{"POST", "/api/v1/findings/" + id + "/ack", ""},
		{"POST", "/api/v1/findings/" + id + "/snooze", `{"for":"4h"}`},
		{"POST", "/api/v1/findings/" + id + "/dismiss", `{"reason":"not_an_issue"}`},
		{"POST", "/api/v1/findings/" + id + "/undismiss", ""},
		{"POST", "/api/v1/findings/" + id + "/suppress", ""},
		{"POST", "/api/v1/findings/" + id + "/unsuppress", ""},
		{"POST", "/api/v1/findings/" + id + "/resolve", `{"note":"fixed"}`},
		{"POST", "/api/v1/runs", ""},
		{"POST", "/api/v1/approvals/a1/approve", ""},
		{"POST", "/api/v1/approvals/a1/deny", ""},
		{"POST", "/api/v1/silences", `{"matchers":{"kind":"vm"},"comment":"maint","duration":"2h"}`},
		{"DELETE", "/api/v1/silences/s1", ""},
		{"POST", "/-/reload", ""},
	}
}

func readRoutes(e *env) []routeCase {
	return []routeCase{
		{"GET", "/api/v1/findings", ""},
		{"GET", "/api/v1/findings/" + e.ids["cpu"], ""},
		{"GET", "/api/v1/runs", ""},
		{"GET", "/api/v1/runs/" + e.runID, ""},
		{"GET", "/api/v1/approvals", ""},
		{"GET", "/api/v1/silences", ""},
		{"GET", "/api/v1/status", ""},
		{"GET", "/api/v1/agent/capabilities", ""},
	}
}

// assertUntouched checks that refused mutations changed nothing.
func assertUntouched(t *testing.T, e *env) {
	t.Helper()
	f := e.finding("cpu")
	if f.AcknowledgedAt != nil || f.SnoozedUntil != nil || f.DismissedReason != "" || f.Suppressed || !f.Active() {
		t.Fatalf("a refused call changed the finding: %+v", f.Operator)
	}
	if trig, rel := e.daemon.counts(); trig != 0 || rel != 0 {
		t.Fatalf("a refused call reached the daemon: %d triggers, %d reloads", trig, rel)
	}
	if sil, _ := e.store.Silences(t.Context(), e.now, false); len(sil) != 0 {
		t.Fatalf("a refused call added a silence: %+v", sil)
	}
}

func TestMutationsNeedAdminToken(t *testing.T) {
	e := newEnv(t, testTokens, nil)
	for _, rc := range mutatingRoutes(e) {
		t.Run(rc.method+" "+rc.path, func(t *testing.T) {
			_, _, h := e.do(rc.method, rc.path, "", rc.body)
			e.expectError(rc.method, rc.path, "", rc.body, http.StatusUnauthorized, api.CodeUnauthorized, "")
			if !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("401 without WWW-Authenticate: Bearer (got %q)", h.Get("WWW-Authenticate"))
			}
			e.expectError(rc.method, rc.path, "not-a-token", rc.body, http.StatusUnauthorized, api.CodeUnauthorized, "")
			e.expectError(rc.method, rc.path, readSecret, rc.body, http.StatusForbidden, api.CodeForbidden, "")
		})
	}
	assertUntouched(t, e)
}

func TestMutationsRefusedWithoutConfiguredTokens(t *testing.T) {
	e := newEnv(t, nil, nil)
	for _, rc := range mutatingRoutes(e) {
		e.expectError(rc.method, rc.path, "", rc.body, http.StatusUnauthorized, api.CodeUnauthorized, "")
		e.expectError(rc.method, rc.path, adminSecret, rc.body, http.StatusUnauthorized, api.CodeUnauthorized, "")
	}
	assertUntouched(t, e)
	for _, rc := range readRoutes(e) {
		if got, out, _ := e.do(rc.method, rc.path, "", ""); got != http.StatusOK {
			t.Errorf("%s %s with no tokens configured: %d %v, want open read", rc.method, rc.path, got, out)
		}
	}
}

func TestReadsNeedTokenWhenConfigured(t *testing.T) {
	e := newEnv(t, testTokens, nil)
	for _, rc := range readRoutes(e) {
		e.expectError(rc.method, rc.path, "", "", http.StatusUnauthorized, api.CodeUnauthorized, "")
		e.expectError(rc.method, rc.path, "wrong", "", http.StatusUnauthorized, api.CodeUnauthorized, "")
		for _, tok := range []string{readSecret, adminSecret} {
			if got, out, _ := e.do(rc.method, rc.path, tok, ""); got != http.StatusOK {
				t.Errorf("%s %s with a valid token: %d %v", rc.method, rc.path, got, out)
			}
		}
	}
	// /healthz, /readyz and /metrics stay open.
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		if got, _, _ := e.do("GET", p, "", ""); got != http.StatusOK {
			t.Errorf("GET %s without a token: %d, want 200", p, got)
		}
	}
}

func TestAuthorizationHeaderForms(t *testing.T) {
	e := newEnv(t, testTokens, nil)
	for _, c := range []struct {
		header string
		want   int
	}{
		{"Bearer " + readSecret, 200},
		{"bearer " + readSecret, 200},
		{"Basic " + readSecret, 401},
		{readSecret, 401},
		{"Bearer " + readSecret + "x", 401},
		{"Bearer " + readSecret[:len(readSecret)-1], 401},
		{"Bearer ", 401},
	} {
		req, _ := http.NewRequest("GET", e.srv.URL+"/api/v1/findings", nil)
		req.Header.Set("Authorization", c.header)
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("Authorization %q: %d, want %d", strings.Replace(c.header, readSecret, "<secret>", 1), resp.StatusCode, c.want)
		}
	}
}

func TestTokensFromConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "ops.token")
	empty := filepath.Join(dir, "empty.token")
	os.WriteFile(good, []byte("  file-secret-123456\n"), 0o600)
	os.WriteFile(empty, []byte("\n \n"), 0o600)

	toks, err := api.TokensFromConfig([]api.TokenSpec{
		{Name: "inline", Token: "inline-secret-0001", Scope: "read"},
		{Name: "file", TokenFile: good, Scope: "admin"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if toks[0].Secret != "inline-secret-0001" || toks[1].Secret != "file-secret-123456" || toks[1].Scope != api.ScopeAdmin || toks[1].Name != "file" {
		t.Fatalf("tokens = %v %q", toks, toks[1].Secret)
	}
	for _, c := range []struct {
		cfg  []api.TokenSpec
		want string
	}{
		{[]api.TokenSpec{{Name: "a", Token: "x-secret-0000001", Scope: "read"}, {Name: "b", TokenFile: filepath.Join(dir, "missing"), Scope: "admin"}}, "http.tokens[1].token_file:"},
		{[]api.TokenSpec{{Name: "a", TokenFile: empty, Scope: "admin"}}, "http.tokens[0].token_file: " + empty + " is empty"},
		{[]api.TokenSpec{{Name: "a", Scope: "admin"}}, "http.tokens[0]: set exactly one"},
		{[]api.TokenSpec{{Name: "a", Token: "x", TokenFile: good, Scope: "admin"}}, "http.tokens[0]: set exactly one"},
	} {
		_, err := api.TokensFromConfig(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("TokensFromConfig: err = %v, want it to contain %q", err, c.want)
		}
	}
}

func TestNewValidatesOptions(t *testing.T) {
	e := newEnv(t, nil, nil)
	for _, c := range []struct {
		mod  func(*api.Options)
		want string
	}{
		{func(o *api.Options) { o.Store = nil }, "Store: required"},
		{func(o *api.Options) { o.Daemon = nil }, "Daemon: required"},
		{func(o *api.Options) { o.MaxBodyBytes = -1 }, "MaxBodyBytes"},
		{func(o *api.Options) { o.Tokens = []api.Token{{Name: "a", Secret: "s-secret-0000001", Scope: "root"}} }, "Tokens[0].Scope"},
		{func(o *api.Options) {
			o.Tokens = []api.Token{{Name: "a", Secret: "s-secret-0000001", Scope: "read"}, {Name: "a", Secret: "t-secret-0000001", Scope: "read"}}
		}, "Tokens[1].Name: duplicate"},
		{func(o *api.Options) {
			o.Tokens = []api.Token{{Name: "a", Secret: "s-secret-0000001", Scope: "read"}, {Name: "b", Secret: "s-secret-0000001", Scope: "admin"}}
		}, "Tokens[1].Secret: same secret"},
		{func(o *api.Options) { o.Tokens = []api.Token{{Name: "", Secret: "", Scope: "read"}} }, "Tokens[0].Secret: required"},
	} {
		opts := api.Options{Store: e.store, Daemon: e.daemon}
		c.mod(&opts)
		_, err := api.New(opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New: err = %v, want it to contain %q", err, c.want)
		}
	}
}

func TestTokenNeverPrintsSecret(t *testing.T) {
	tok := api.Token{Name: "ops", Secret: adminSecret, Scope: api.ScopeAdmin}
	for _, s := range []string{tok.String(), tok.GoString(), fmtAll(tok)} {
		if strings.Contains(s, adminSecret) {
			t.Fatalf("token printed its secret: %s", s)
		}
	}
	if id := api.TokenID(adminSecret); len(id) != 8 || strings.Contains(adminSecret, id) {
		t.Fatalf("TokenID = %q", id)
	}
}

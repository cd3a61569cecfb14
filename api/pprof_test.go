package api_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/patrold/patrold/api"
)

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(data)
}

// TestPprofOffByDefaultAdminOnly: /debug/pprof is absent unless enabled,
// and then answers admin tokens only.
func TestPprofOffByDefaultAdminOnly(t *testing.T) {
	off := newEnv(t, testTokens, nil)
	off.expectError("GET", "/debug/pprof/", adminSecret, "", http.StatusNotFound, api.CodeNotFound, "")
	on := newEnv(t, testTokens, func(o *api.Options) { o.Pprof = true })
	on.expectError("GET", "/debug/pprof/heap", "", "", http.StatusUnauthorized, api.CodeUnauthorized, "")
	on.expectError("GET", "/debug/pprof/heap", readSecret, "", http.StatusForbidden, api.CodeForbidden, "")
	code, body := get(t, on.srv.URL+"/debug/pprof/", adminSecret)
	if code != 200 || !strings.Contains(body, "goroutine") {
		t.Fatalf("index: %d %.200s", code, body)
	}
	code, body = get(t, on.srv.URL+"/debug/pprof/goroutine?debug=1", adminSecret)
	if code != 200 || !strings.Contains(body, "goroutine profile: total") {
		t.Fatalf("goroutine: %d %.200s", code, body)
	}
}

package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/patrold/patrold/api"
)

func benchServe(b *testing.B, h http.Handler, method, path, token string, want int) {
	b.Helper()
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(method, path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			b.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
	}
}

// BenchmarkAuthorizedRead measures auth (20 tokens, every digest compared)
// plus routing and JSON on a route that does no I/O.
func BenchmarkAuthorizedRead(b *testing.B) {
	tokens := append([]api.Token{}, testTokens...)
	for i := range 18 {
		tokens = append(tokens, api.Token{Name: fmt.Sprintf("t%d", i), Secret: fmt.Sprintf("secret-%d-abcdef", i), Scope: api.ScopeRead})
	}
	e := newEnv(b, tokens, nil)
	benchServe(b, e.api.Handler(), "GET", "/api/v1/status", readSecret, 200)
}

// BenchmarkListFindings lists the five seeded findings from SQLite.
func BenchmarkListFindings(b *testing.B) {
	e := newEnv(b, testTokens, nil)
	benchServe(b, e.api.Handler(), "GET", "/api/v1/findings?state=all", readSecret, 200)
}

// BenchmarkAck measures one audited mutation: an immediate transaction for
// the action and one audit insert.
func BenchmarkAck(b *testing.B) {
	e := newEnv(b, testTokens, nil)
	benchServe(b, e.api.Handler(), "POST", "/api/v1/findings/"+e.ids["cpu"]+"/ack", adminSecret, 200)
}

package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/store/storetest"
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
		tokens = append(tokens, api.Token{Name: fmt.Sprintf("t%d", i), Secret: fmt.Sprintf("secret-%d-abcdefgh", i), Scope: api.ScopeRead})
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

// seedLarge stores 50 runs with 1 MiB reports and 10k active findings.
func seedLarge(b *testing.B, e *env) {
	b.Helper()
	report := []byte(`{"run_id":"x","pad":"` + strings.Repeat("x", 1<<20) + `"}`)
	tx, err := storetest.RawDB(b, e.store.Path()).Begin()
	if err != nil {
		b.Fatal(err)
	}
	for i := range 50 {
		at := e.now.Add(-time.Duration(i) * time.Hour).Format(time.RFC3339Nano)
		if _, err := tx.Exec(`INSERT INTO runs (id, trigger, status, analysis, started_at, finished_at, complete, report, summary)
			VALUES (?, 'scheduled', 'critical', 'deterministic', ?, ?, 1, ?, '{"duration_ms":1,"status_reasons":[],"findings":10000}')`,
			fmt.Sprintf("run-%02d", i), at, at, string(report)); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 10000 {
		at := e.now.Add(-time.Duration(i) * time.Second).Format(time.RFC3339Nano)
		id := fmt.Sprintf("%016x", i+1000)
		if _, err := tx.Exec(`INSERT INTO findings (id, key, resource_id, category, severity, source, title, status, detected_at)
			VALUES (?, 'high_cpu', ?, 'performance', 'warning', 'deterministic', 'High CPU', 'active', ?)`,
			id, fmt.Sprintf("vm/%d", i), at); err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Exec(`INSERT INTO finding_seen (id, last_seen_at) VALUES (?, ?)`, id, at); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkListRunsLargeReports lists the default page of runs while 50
// stored runs carry 1 MiB reports: the list reads the summaries only, so
// bytes per op do not grow with the reports.
func BenchmarkListRunsLargeReports(b *testing.B) {
	e := newEnv(b, testTokens, nil)
	seedLarge(b, e)
	benchServe(b, e.api.Handler(), "GET", "/api/v1/runs", readSecret, 200)
}

// BenchmarkListFindingsPage lists the default page of 10k active
// findings: the page walks the list index and reads 101 rows.
func BenchmarkListFindingsPage(b *testing.B) {
	e := newEnv(b, testTokens, nil)
	seedLarge(b, e)
	benchServe(b, e.api.Handler(), "GET", "/api/v1/findings", readSecret, 200)
}

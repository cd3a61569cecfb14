package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/store"
)

const (
	adminSecret = "admin-secret-4f9c2e7a1b60"
	readSecret  = "read-secret-8d3b6a0c55e1"
)

var testTokens = []api.Token{
	{Name: "ops", Secret: adminSecret, Scope: api.ScopeAdmin},
	{Name: "dash", Secret: readSecret, Scope: api.ScopeRead},
}

// fakeDaemon is a hand-written Daemon.
type fakeDaemon struct {
	mu        sync.Mutex
	busy      string // current run id when busy
	triggered []string
	scoped    []string // "id resources reason" of each scoped run
	reloads   int
	reloadErr error
	readyErr  error
}

func (d *fakeDaemon) TriggerRun(context.Context) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.busy != "" {
		return "", &patrol.BusyError{CurrentRunID: d.busy}
	}
	id := fmt.Sprintf("run-%d", len(d.triggered)+1)
	d.triggered = append(d.triggered, id)
	return id, nil
}

func (d *fakeDaemon) TriggerScopedRun(ctx context.Context, resources []string, reason string) (string, error) {
	id, err := d.TriggerRun(ctx)
	if err == nil {
		d.mu.Lock()
		d.scoped = append(d.scoped, fmt.Sprintf("%s %q %q", id, resources, reason))
		d.mu.Unlock()
	}
	return id, err
}

func (d *fakeDaemon) Reload() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reloads++
	return d.reloadErr
}

func (d *fakeDaemon) Status(context.Context) (api.Status, error) {
	return api.Status{Version: "test", CurrentRunID: d.busy}, nil
}

func (d *fakeDaemon) Ready(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.readyErr
}

func (d *fakeDaemon) counts() (triggered, reloads int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.triggered), d.reloads
}

type env struct {
	t      testing.TB
	store  *store.Store
	daemon *fakeDaemon
	api    *api.API
	srv    *httptest.Server
	reg    *prometheus.Registry
	logs   *testkit.LogBuffer
	now    time.Time
	ids    map[string]string // seed name -> finding id
	runID  string
}

// newEnv starts the API on loopback over a real SQLite store seeded with
// five findings and one run. mod may adjust the options.
func newEnv(t testing.TB, tokens []api.Token, mod func(*api.Options)) *env {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "patrold.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &env{t: t, store: st, daemon: &fakeDaemon{}, reg: prometheus.NewRegistry(), logs: &testkit.LogBuffer{},
		now: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
	e.seed()
	opts := api.Options{
		Store: st, Daemon: e.daemon, Tokens: tokens,
		Capabilities: func() api.Capabilities { return api.NewCapabilities() },
		Gatherer:     e.reg, Registerer: e.reg,
		Logger: slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:    func() time.Time { return e.now },
	}
	if mod != nil {
		mod(&opts)
	}
	e.api, err = api.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(e.api.Handler())
	t.Cleanup(e.srv.Close)
	return e
}

var seedObservations = map[string]findings.Observation{
	"cpu":    {Key: "high_cpu", ResourceID: "node/pve1", ResourceKind: "node", Category: findings.CategoryPerformance, Severity: findings.SeverityWarning, Source: findings.SourceDeterministic, Title: prompt.Safe("CPU high", 4000)},
	"disk":   {Key: "high_disk", ResourceID: "storage/pve1/local-zfs", ResourceKind: "storage", Category: findings.CategoryCapacity, Severity: findings.SeverityCritical, Source: findings.SourceDeterministic, Title: prompt.Safe("Storage full", 4000)},
	"mem":    {Key: "high_memory", ResourceID: "vm/101", ResourceKind: "vm", Category: findings.CategoryPerformance, Severity: findings.SeverityWarning, Source: findings.SourceDeterministic, Title: prompt.Safe("Memory high", 4000)},
	"backup": {Key: "backup_stale", ResourceID: "vm/102", ResourceKind: "vm", Category: findings.CategoryBackup, Severity: findings.SeverityWarning, Source: findings.SourceDeterministic, Title: prompt.Safe("Backup stale", 4000)},
	"smart":  {Key: "smart_failure", ResourceID: "disk/pve1/sda", ResourceKind: "disk", Category: findings.CategoryReliability, Severity: findings.SeverityCritical, Source: findings.SourceDeterministic, Title: prompt.Safe("SMART failing", 4000)},
}

func (e *env) seed() {
	e.ids = map[string]string{}
	var obs []findings.Observation
	for name, o := range seedObservations {
		e.ids[name] = o.Normalize()
		obs = append(obs, o)
	}
	e.runID = findings.NewID(e.now)
	started := e.now.Add(-time.Second)
	_, err := e.store.CommitRun(context.Background(), findings.RunInput{
		RunID: e.runID, Now: e.now, Observations: obs, Policy: findings.DefaultPublishPolicy(),
	}, func(changes []findings.Change) (findings.RunRecord, []findings.OutboxDraft, error) {
		report, _ := json.Marshal(map[string]any{"run_id": e.runID, "status": "critical", "findings": len(changes)})
		fin := e.now
		return findings.RunRecord{ID: e.runID, Trigger: "manual", Status: "critical", Analysis: "deterministic",
			StartedAt: started, FinishedAt: &fin, Complete: true, Report: report}, nil, nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// do sends one request and decodes a JSON object answer.
func (e *env) do(method, path, token, body string) (int, map[string]any, http.Header) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	out := map[string]any{}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(data, &out); err != nil {
			e.t.Fatalf("%s %s: answer is not a JSON object: %v: %s", method, path, err, data)
		}
	}
	return resp.StatusCode, out, resp.Header
}

// expectError asserts an error answer with status, code and (when given)
// the field named in details.
func (e *env) expectError(method, path, token, body string, status int, code api.Code, field string) map[string]any {
	e.t.Helper()
	got, out, _ := e.do(method, path, token, body)
	if got != status || out["error"] != string(code) {
		e.t.Fatalf("%s %s %s: got %d %v, want %d %s", method, path, body, got, out, status, code)
	}
	if _, ok := out["message"].(string); !ok {
		e.t.Fatalf("%s %s: error body has no message: %v", method, path, out)
	}
	details, ok := out["details"].(map[string]any)
	if !ok {
		e.t.Fatalf("%s %s: error body has no details object: %v", method, path, out)
	}
	if field != "" && details["field"] != field {
		e.t.Fatalf("%s %s %s: details.field = %v, want %q (%v)", method, path, body, details["field"], field, out)
	}
	return out
}

func (e *env) finding(name string) findings.Finding {
	e.t.Helper()
	f, err := e.store.Get(context.Background(), e.ids[name])
	if err != nil {
		e.t.Fatal(err)
	}
	return f
}

func fmtAll(v any) string { return fmt.Sprintf("%v %+v %#v %s", v, v, v, v) }

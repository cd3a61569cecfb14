package analyst_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/openai"
	"github.com/patrold/patrold/model/script"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/patrol/analyst"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/store"
	"github.com/patrold/patrold/store/records"
)

// runPatrol runs one patrol over small-faults.json with a real SQLite
// store and the given analyst options.
func runPatrol(t *testing.T, opts analyst.Options) (*patrol.Report, *store.Store) {
	t.Helper()
	st := openTestStore(t)
	return runPatrolOn(t, st, opts), st
}

func openTestStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "patrold.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// runPatrolOn is runPatrol on a given store.
func runPatrolOn(t *testing.T, st *store.Store, opts analyst.Options) *patrol.Report {
	t.Helper()
	ctx := context.Background()
	if opts.Ledger == nil {
		opts.Ledger = st // the runs table is the spend ledger
	}
	opts.Now = func() time.Time { return testNow }
	a, err := analyst.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	snap := loadSnap(t, "small-faults.json")
	pol := defaultPolicy(t)
	src := snapshot.SourceFunc(func(context.Context) (*snapshot.Snapshot, []snapshot.Problem, error) { return snap, nil, nil })
	runner, err := patrol.New(patrol.Options{
		Store: st, Now: func() time.Time { return testNow },
		Settings: func() patrol.Settings {
			return patrol.Settings{Policy: pol, Publish: findings.DefaultPublishPolicy(), Source: src, Analyst: a}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := runner.Run(ctx, patrol.TriggerManual, patrol.RunOptions{})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return rep
}

// checkModelRun asserts the report of a run where the model filed high_disk
// on local-zfs and the daemon filed the other eight signals.
func checkModelRun(t *testing.T, rep *patrol.Report, st *store.Store) {
	t.Helper()
	if rep.Analysis != patrol.AnalysisModel || rep.Status != patrol.StatusCritical || len(rep.StatusReasons) != 0 {
		t.Fatalf("analysis %s status %s reasons %v errors %v", rep.Analysis, rep.Status, rep.StatusReasons, rep.Errors)
	}
	bySource := map[findings.Source][]string{}
	for _, f := range rep.Findings {
		bySource[f.Source] = append(bySource[f.Source], f.Key+" "+f.ResourceID)
	}
	if got := bySource[findings.SourceModel]; len(got) != 1 || got[0] != "high_disk "+localZFS {
		t.Errorf("model findings %v", got)
	}
	if got := bySource[findings.SourceDeterministic]; len(got) != 8 {
		t.Errorf("deterministic findings %v", got)
	}
	if len(rep.UnmatchedSignals) != 8 {
		t.Errorf("unmatched %v", rep.UnmatchedSignals)
	}
	if rep.Usage.InputTokens <= 0 || rep.Usage.OutputTokens <= 0 || rep.Usage.Turns <= 0 {
		t.Errorf("usage %+v", rep.Usage)
	}
	f, err := st.Get(context.Background(), findings.ID(localZFS, findings.CategoryCapacity, "high_disk"))
	if err != nil || f.Source != findings.SourceModel || f.Evidence == "" {
		t.Errorf("stored model finding %+v: %v", f, err)
	}
	ex, err := st.Exchange(context.Background(), rep.RunID)
	var rec model.Recording
	if err != nil || json.Unmarshal(ex, &rec) != nil || len(rec.Exchanges) != rep.Usage.Turns {
		t.Errorf("stored exchange: %v, %d exchanges for %d turns", err, len(rec.Exchanges), rep.Usage.Turns)
	}
}

// (g) End to end with the scripted provider and a real SQLite store.
func TestRunWithScriptedModel(t *testing.T) {
	p, err := script.Load(filepath.Join("testdata", "scripts", "local-zfs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rep, st := runPatrol(t, analyst.Options{Provider: p, Model: "script"})
	checkModelRun(t, rep, st)
	// The recorded exchange replays to the same run.
	ex, _ := st.Exchange(context.Background(), rep.RunID)
	var rec model.Recording
	if err := json.Unmarshal(ex, &rec); err != nil {
		t.Fatal(err)
	}
	replay, err := script.NewReplay(rec)
	if err != nil {
		t.Fatal(err)
	}
	again, st2 := runPatrol(t, analyst.Options{Provider: replay, Model: "script"})
	checkModelRun(t, again, st2)
}

// openAIServer speaks the chat completions wire format: each request gets
// the next reply, the last one repeats. It keeps the request bodies.
type openAIServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
}

func newOpenAIServer(t *testing.T, replies ...string) *openAIServer {
	s := &openAIServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		s.mu.Lock()
		s.bodies = append(s.bodies, body)
		n := len(s.bodies) - 1
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, replies[min(n, len(replies)-1)])
	}))
	t.Cleanup(s.Close)
	return s
}

func completion(n int, message string) string {
	return fmt.Sprintf(`{"id":"chatcmpl-%d","object":"chat.completion","created":1,"model":"gpt-test-2026",
 "choices":[{"index":0,"finish_reason":"stop","message":%s}],
 "usage":{"prompt_tokens":%d,"completion_tokens":20,"total_tokens":%d}}`, n, message, 1000+n, 1020+n)
}

func toolMessage(id, name, args string) string {
	b, _ := json.Marshal(args)
	return fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}]}`, id, name, b)
}

// (g) End to end through model/openai against a loopback server.
func TestRunWithOpenAIWire(t *testing.T) {
	srv := newOpenAIServer(t,
		completion(1, toolMessage("call_get", analyst.ToolGetResource, `{"id":"storage/pve1/local-zfs"}`)),
		completion(2, toolMessage("call_report", analyst.ToolReportFinding, `{"resource_id":"storage/pve1/local-zfs","category":"capacity","key":"high_disk","severity":"critical","title":"local-zfs is almost full","description":"The pool is above its critical threshold.","recommendation":"Free space or grow the pool.","evidence":"usage_percent 96.3, critical threshold 95"}`)),
		completion(3, `{"role":"assistant","content":"Filed one finding."}`),
		completion(4, `{"role":"assistant","content":"Nothing more to file."}`),
	)
	ep := model.DefaultEndpoint(model.ProviderOpenAI)
	ep.BaseURL, ep.Model, ep.MaxRetries, ep.Timeout = srv.URL+"/v1", "gpt-test", 0, 5*time.Second
	client, err := openai.New(openai.Options{Endpoint: ep})
	if err != nil {
		t.Fatal(err)
	}
	rep, st := runPatrol(t, analyst.Options{
		Provider: client, Model: client.Model(), ContextWindow: client.ContextWindow(),
		Prices: model.Prices{"gpt-test": {InputPerMTok: 2.5, OutputPerMTok: 10}}, Budget: model.BudgetOptions{PerDayUSD: 5},
	})
	checkModelRun(t, rep, st)
	// Three detection turns and one evaluation turn, usage from the wire.
	if rep.Usage.Turns != 4 || rep.Usage.InputTokens != 1001+1002+1003+1004 || rep.Usage.OutputTokens != 80 {
		t.Errorf("usage %+v", rep.Usage)
	}
	wantCost := (float64(rep.Usage.InputTokens)*2.5 + 80*10) / 1e6
	if d := rep.Usage.CostUSD - wantCost; d > 1e-9 || d < -1e-9 {
		t.Errorf("cost %v, want %v", rep.Usage.CostUSD, wantCost)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	second, _ := json.Marshal(srv.bodies[1])
	mustContain(t, "second request", string(second), `"role":"system"`, `"role":"tool"`, `"tool_call_id":"call_get"`, "UNTRUSTED kind=tool_result", `"name":"report_finding"`)
	if strings.Contains(string(second), "Ignore previous instructions") {
		t.Errorf("untrusted notes reached the wire verbatim")
	}
}

// A run whose model spend crosses the per-run budget stops calling the
// model after that turn and reports budget_exhausted (degraded). It files
// every signal the model did not. It records the spend in the runs table,
// the ledger the day and 30-day budgets read.
func TestRunStopsAtBudget(t *testing.T) {
	big := model.Usage{InputTokens: 2000, OutputTokens: 10}
	p, err := script.New(&script.Script{Turns: []script.Turn{
		{ToolCalls: []model.ToolCall{get("c1", localZFS)}, Usage: &big},
		{Text: "never reached"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	rep, st := runPatrol(t, analyst.Options{Provider: p, Model: "test-model",
		Prices: model.Prices{"test-model": {InputPerMTok: 1000}}, // $2 for the first turn
		Budget: model.BudgetOptions{PerRunUSD: 1, PerDayUSD: 1.5}})
	if rep.Status != patrol.StatusDegraded || !slices.Contains(rep.StatusReasons, model.ReasonBudgetExhausted) {
		t.Fatalf("status %s reasons %v", rep.Status, rep.StatusReasons)
	}
	if rep.Usage.Turns != 1 || rep.Usage.CostUSD < 2 {
		t.Fatalf("usage %+v", rep.Usage)
	}
	if len(rep.UnmatchedSignals) != 9 || len(rep.Findings) != 9 {
		t.Fatalf("every signal must still be filed: %d unmatched, %d findings", len(rep.UnmatchedSignals), len(rep.Findings))
	}
	spent, err := st.Spent(testNow.Add(-24 * time.Hour))
	if err != nil || spent < 2 {
		t.Fatalf("ledger: %v %v", spent, err)
	}
}

// model.budget bounds runs and remediation sessions together: a day whose
// budget sessions spent leaves a run no model call, and the run still files
// every signal.
func TestSessionSpendCountsInTheRunsDayBudget(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	if err := st.StartSession(ctx, "s1", "f1", 1, "model", testNow.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := st.FinishSession(ctx, "s1", records.SessionEnd{Outcome: "cannot_fix", FinishedAt: testNow.Add(-50 * time.Minute),
		Transcript: []byte(`{}`), CostUSD: 2}); err != nil {
		t.Fatal(err)
	}
	p, err := script.New(&script.Script{Turns: []script.Turn{{Text: "never reached"}}})
	if err != nil {
		t.Fatal(err)
	}
	rep := runPatrolOn(t, st, analyst.Options{Provider: p, Model: "test-model",
		Prices: model.Prices{"test-model": {InputPerMTok: 1000}}, Budget: model.BudgetOptions{PerDayUSD: 1.5}})
	if rep.Usage.Turns != 0 || !slices.Contains(rep.StatusReasons, model.ReasonBudgetExhausted) {
		t.Fatalf("turns %d, reasons %v: the sessions' spend did not count", rep.Usage.Turns, rep.StatusReasons)
	}
	if len(rep.Findings) != 9 {
		t.Fatalf("every signal must still be filed: %d findings", len(rep.Findings))
	}
	if runs, err := st.RunSpent(testNow.Add(-24 * time.Hour)); err != nil || runs != 0 {
		t.Fatalf("runs' share %v, %v; want 0", runs, err)
	}
}

// Cached input is charged at the cache rate, in the run's cost and in
// the ledger the day and 30-day budgets read: a turn of 1M input tokens
// of which 800k were cache reads costs 200k x $10 + 800k x $1 per
// million, $2.80, not $10.
func TestRunChargesCacheReadsAtTheCacheRate(t *testing.T) {
	cached := model.Usage{InputTokens: 1_000_000, CacheReadTokens: 800_000}
	p, err := script.New(&script.Script{Turns: []script.Turn{
		{ToolCalls: []model.ToolCall{get("c1", localZFS)}, Usage: &cached},
		{Text: "Nothing to file.", Usage: &model.Usage{}},
		{Text: "Nothing more.", Usage: &model.Usage{}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	rep, st := runPatrol(t, analyst.Options{Provider: p, Model: "test-model",
		Prices: model.Prices{"test-model": {InputPerMTok: 10, CacheReadPerMTok: 1}},
		Budget: model.BudgetOptions{PerRunUSD: 100, PerDayUSD: 100}})
	if d := rep.Usage.CostUSD - 2.8; d > 1e-9 || d < -1e-9 {
		t.Errorf("run cost %v, want 2.8 (usage %+v)", rep.Usage.CostUSD, rep.Usage)
	}
	spent, err := st.Spent(testNow.Add(-24 * time.Hour))
	if d := spent - 2.8; err != nil || d > 1e-9 || d < -1e-9 {
		t.Errorf("ledger %v (%v), want 2.8", spent, err)
	}
}

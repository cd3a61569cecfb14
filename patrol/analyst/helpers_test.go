package analyst_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/script"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/patrol/analyst"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

var testNow = time.Date(2026, 11, 29, 6, 10, 0, 0, time.UTC)

func loadSnap(t testing.TB, name string) *snapshot.Snapshot {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := snapshot.Decode(data, snapshot.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func defaultPolicy(t testing.TB) *alerts.Policy {
	t.Helper()
	pol, err := alerts.New(alerts.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

// input builds the analyst input the runner would: signals over the whole
// snapshot with hysteresis from the active findings.
func input(t testing.TB, snap *snapshot.Snapshot, active ...findings.Finding) patrol.AnalysisInput {
	t.Helper()
	pol := defaultPolicy(t)
	act := signals.Active{}
	for _, f := range active {
		if typ, ok := signals.Lookup(f.Key); ok {
			act[signals.Key{Type: typ, ResourceID: f.ResourceID}] = true
		}
	}
	return patrol.AnalysisInput{RunID: "run-1", Now: testNow, Snapshot: snap, Signals: signals.Detect(snap, pol, act), Active: active, Thresholds: pol}
}

// call builds a scripted tool call.
func call(id, name string, args map[string]any) model.ToolCall {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return model.ToolCall{ID: id, Name: name, Arguments: b}
}

func tools(calls ...model.ToolCall) script.Turn { return script.Turn{ToolCalls: calls} }
func text(s string) script.Turn                 { return script.Turn{Text: s} }

func get(id, resource string) model.ToolCall {
	return call(id, analyst.ToolGetResource, map[string]any{"id": resource})
}

func report(id, resource, category, key, severity, evidence string) model.ToolCall {
	return call(id, analyst.ToolReportFinding, map[string]any{
		"resource_id": resource, "category": category, "key": key, "severity": severity,
		"title": "A problem on " + resource, "description": "Seen by the analyst.", "recommendation": "Look at it.", "evidence": evidence,
	})
}

func assess(id, finding, verdict, evidence string) model.ToolCall {
	return call(id, analyst.ToolAssessFinding, map[string]any{"finding_id": finding, "verdict": verdict, "evidence": evidence})
}

// capture is a recording fake: it forwards to next and keeps every
// request it was sent.
type capture struct {
	next model.Provider
	fail func(n int) error // n is the 1-based call number; nil: never

	mu   sync.Mutex
	reqs []model.Request
}

func (c *capture) Name() string { return "capture" }

func (c *capture) Chat(ctx context.Context, req model.Request) (*model.Response, error) {
	c.mu.Lock()
	c.reqs = append(c.reqs, req)
	n := len(c.reqs)
	c.mu.Unlock()
	if c.fail != nil {
		if err := c.fail(n); err != nil {
			return nil, err
		}
	}
	return c.next.Chat(ctx, req)
}

func (c *capture) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.reqs)
}

func (c *capture) requests() []model.Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]model.Request(nil), c.reqs...)
}

// result returns the tool result the model received for a call id.
func (c *capture) result(t testing.TB, callID string) string {
	t.Helper()
	for _, req := range c.requests() {
		for _, m := range req.Messages {
			if m.Role == model.RoleTool && m.ToolCallID == callID {
				return m.Content
			}
		}
	}
	t.Fatalf("no tool result for call %s was sent to the model", callID)
	return ""
}

// scripted builds an analyst over a scripted provider wrapped in a
// capture; mut adjusts the options.
func scripted(t testing.TB, turns []script.Turn, mut func(*analyst.Options)) (*analyst.Analyst, *capture) {
	t.Helper()
	p, err := script.New(&script.Script{Turns: turns})
	if err != nil {
		t.Fatal(err)
	}
	c := &capture{next: p}
	opts := analyst.Options{Provider: c, Model: "test-model", Now: func() time.Time { return testNow }}
	if mut != nil {
		mut(&opts)
	}
	a, err := analyst.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return a, c
}

func analyze(t testing.TB, a *analyst.Analyst, in patrol.AnalysisInput) *patrol.Analysis {
	t.Helper()
	an, err := a.Analyze(context.Background(), in)
	if err != nil {
		t.Fatalf("Analyze: %v", err)
	}
	return an
}

func refs(sigs []signals.Signal) []string {
	out := make([]string, len(sigs))
	for i, s := range sigs {
		out[i] = string(s.Type) + " " + s.ResourceID
	}
	return out
}

func mustContain(t testing.TB, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s does not contain %q:\n%s", what, sub, s)
		}
	}
}

package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/patrold/patrold/model"
)

// scripted is a hand-written model.Provider returning its turns in order and
// then a plain "done"; it records every request.
type scripted struct {
	mu    sync.Mutex
	turns []model.Response
	reqs  []model.Request
}

var _ model.Provider = (*scripted)(nil)

func (p *scripted) Name() string { return "scripted" }

func (p *scripted) Chat(_ context.Context, req model.Request) (*model.Response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	req.Messages = append([]model.Message(nil), req.Messages...)
	p.reqs = append(p.reqs, req)
	i := len(p.reqs) - 1
	if i < len(p.turns) {
		r := p.turns[i]
		return &r, nil
	}
	return &model.Response{Text: "done", Usage: model.Usage{InputTokens: 1}}, nil
}

func (p *scripted) requests() []model.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]model.Request(nil), p.reqs...)
}

// tc builds a tool call with JSON arguments.
func tc(name string, args string) model.ToolCall {
	if args == "" {
		args = "{}"
	}
	return model.ToolCall{Name: name, Arguments: json.RawMessage(args)}
}

// turn builds a response holding the given calls.
func turn(calls ...model.ToolCall) model.Response {
	for i := range calls {
		if calls[i].ID == "" {
			calls[i].ID = fmt.Sprintf("c%d", i+1)
		}
	}
	return model.Response{ToolCalls: calls, Usage: model.Usage{InputTokens: 10, OutputTokens: 2}}
}

func text(s string) model.Response { return model.Response{Text: s} }

const idSchema = `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`

// calls counts handler invocations per tool.
type calls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *calls) inc(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[name]++
}

func (c *calls) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

// testTools returns a resolve, a read, an infrastructure write, a patrol
// state write, a findings read and an operator question, all counting calls.
func testTools(cnt *calls) []Tool {
	ok := func(name string) Handler {
		return func(_ context.Context, args json.RawMessage) (any, error) {
			cnt.inc(name)
			return map[string]any{"tool": name, "args": json.RawMessage(args)}, nil
		}
	}
	return []Tool{
		{Name: "get_resource", Kind: KindResolve, Verifies: true, Schema: json.RawMessage(idSchema), Handler: ok("get_resource")},
		{Name: "read_logs", Kind: KindRead, Verifies: true, Schema: json.RawMessage(idSchema), Handler: ok("read_logs")},
		{Name: "restart", Kind: KindWrite, Target: TargetInfrastructure, Authority: &testAuthority{}, Schema: json.RawMessage(idSchema), Handler: ok("restart")},
		{Name: "report_finding", Kind: KindWrite, Target: TargetPatrolState, WritesFindings: true, Handler: ok("report_finding")},
		{Name: "list_findings", Kind: KindRead, ReadsFindings: true, Handler: ok("list_findings")},
		{Name: "ask_operator", Kind: KindUserInput, Handler: ok("ask_operator")},
	}
}

func names(tools []Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

// newTestSession builds a session over tools (all advertised) and a script.
func newTestSession(t *testing.T, tools []Tool, p model.Provider, mod func(*Options)) *Session {
	t.Helper()
	reg, err := NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Provider: p, Registry: reg, Profile: Profile{Name: "test", Tools: names(tools)}, System: "policy"}
	if mod != nil {
		mod(&opts)
	}
	s, err := NewSession(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// replace swaps the tool named like t.
func replace(tools []Tool, t Tool) []Tool {
	out := append([]Tool(nil), tools...)
	for i := range out {
		if out[i].Name == t.Name {
			out[i] = t
		}
	}
	return out
}

// envelope decodes one tool result.
type envelope struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    Code           `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	} `json:"error"`
	Truncated bool `json:"truncated"`
}

func decodeEnvelope(t *testing.T, s string) envelope {
	t.Helper()
	var e envelope
	if err := json.Unmarshal([]byte(s), &e); err != nil {
		t.Fatalf("tool result is not JSON: %v: %s", err, s)
	}
	return e
}

func stepCodes(steps []Step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = fmt.Sprintf("%d:%s:%s:%s", s.Turn, s.Tool, s.Status, s.Code)
	}
	return out
}

// testAuthority admits everything except what its fields refuse; each
// refusal is returned by the hook of that name.
type testAuthority struct {
	mu      sync.Mutex
	refuse  map[Check]error
	calls   []Check
	episode string
}

func (a *testAuthority) hook(c Check) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, c)
	return a.refuse[c]
}

func (a *testAuthority) TargetResolved(json.RawMessage) error { return a.hook(CheckTargetResolved) }
func (a *testAuthority) TargetKind(json.RawMessage) error     { return a.hook(CheckTargetKind) }
func (a *testAuthority) Signal(json.RawMessage) error         { return a.hook(CheckSignal) }
func (a *testAuthority) AutonomyRisk(json.RawMessage) error   { return a.hook(CheckAutonomyRisk) }
func (a *testAuthority) Approval(json.RawMessage) error       { return a.hook(CheckApproval) }
func (a *testAuthority) ConditionPresent(context.Context, json.RawMessage) error {
	return a.hook(CheckConditionPresent)
}
func (a *testAuthority) EpisodeKey(args json.RawMessage) string {
	return a.episode + string(canonicalArgs(args))
}

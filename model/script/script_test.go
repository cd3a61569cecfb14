package script

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/model"
)

const reportArgs = `{"category":"capacity","description":"...","evidence":"usage 96.3%","key":"high_disk",` +
	`"recommendation":"...","resource_id":"storage/pve1/local-zfs","severity":"critical","title":"..."}`

func checkContractScript(t *testing.T, p *Provider) {
	t.Helper()
	ctx := context.Background()
	req := model.Request{System: "policy", Messages: []model.Message{{Role: model.RoleUser, Content: "anything"}}}
	r1, err := p.Chat(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Text != "Looking at storage first." || len(r1.ToolCalls) != 1 || r1.StopReason != StopToolCalls {
		t.Fatalf("turn 1 = %+v", r1)
	}
	if c := r1.ToolCalls[0]; c.Name != "get_resource" || string(c.Arguments) != `{"id":"storage/pve1/local-zfs"}` || c.ID != "call_1_1" {
		t.Fatalf("turn 1 call = %+v %s", c, c.Arguments)
	}
	r2, _ := p.Chat(ctx, req)
	if r2.Text != "" || len(r2.ToolCalls) != 1 || r2.ToolCalls[0].Name != "report_finding" || string(r2.ToolCalls[0].Arguments) != reportArgs {
		t.Fatalf("turn 2 = %+v %s", r2, r2.ToolCalls[0].Arguments)
	}
	r3, _ := p.Chat(ctx, req)
	if r3.Text != "Done." || len(r3.ToolCalls) != 0 || r3.StopReason != StopEndTurn {
		t.Fatalf("turn 3 = %+v", r3)
	}
	for range 2 {
		rN, _ := p.Chat(ctx, req)
		if rN.Text != FinalText || len(rN.ToolCalls) != 0 {
			t.Fatalf("after the script = %+v", rN)
		}
	}
	if r1.Usage.InputTokens == 0 {
		t.Fatal("usage not estimated")
	}
}

func TestContractExampleYAMLAndJSON(t *testing.T) {
	for _, name := range []string{"contract.yaml", "contract.json"} {
		t.Run(name, func(t *testing.T) {
			p, err := Load(filepath.Join("testdata", name))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if p.Remaining() != 3 {
				t.Fatalf("remaining = %d", p.Remaining())
			}
			checkContractScript(t, p)
			p.Reset()
			checkContractScript(t, p)
		})
	}
}

func TestBadScriptsNameTheField(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"empty document", ``, "turns: required"},
		{"not yaml", "turns: [\n  - {", "script: not YAML or JSON"},
		{"turns missing", `foo: 1`, "foo: unknown field"},
		{"turns empty", `turns: []`, "turns: must not be empty"},
		{"turns not list", `turns: {a: 1}`, "turns: must be a list, got a mapping"},
		{"turn not mapping", `turns: [hello]`, "turns[0]: must be a mapping, got a string"},
		{"turn empty", `turns: [{text: ok}, {}]`, "turns[1]: needs text or tool_calls"},
		{"tool name missing", "turns:\n  - text: a\n  - tool_calls: [{name: ok}, {arguments: {a: 1}}]", "turns[1].tool_calls[1].name: required"},
		{"tool name missing first", "turns:\n  - text: a\n  - tool_calls: [{arguments: {}}]", "turns[1].tool_calls[0].name: required"},
		{"tool name bad", `turns: [{tool_calls: [{name: "rm -rf"}]}]`, `turns[0].tool_calls[0].name: "rm -rf" is not a tool name`},
		{"tool name number", `turns: [{tool_calls: [{name: 5}]}]`, "turns[0].tool_calls[0].name: must be a string, got a number"},
		{"arguments list", `turns: [{tool_calls: [{name: x, arguments: [1]}]}]`, "turns[0].tool_calls[0].arguments: must be a mapping, got a list"},
		{"arguments bad string", `turns: [{tool_calls: [{name: x, arguments: "nope"}]}]`, "turns[0].tool_calls[0].arguments: a string must hold a JSON object"},
		{"arguments int keys", `turns: [{tool_calls: [{name: x, arguments: {a: {1: b}}}]}]`, "turns[0].tool_calls[0].arguments: cannot be expressed as JSON"},
		{"unknown turn field", `turns: [{text: a, toolcalls: []}]`, "turns[0].toolcalls: unknown field"},
		{"unknown call field", `turns: [{tool_calls: [{name: a, args: {}}]}]`, "turns[0].tool_calls[0].args: unknown field"},
		{"text not string", `turns: [{text: [a]}]`, "turns[0].text: must be a string, got a list"},
		{"usage negative", `turns: [{text: a, usage: {input_tokens: -1}}]`, "turns[0].usage.input_tokens: must be a non-negative integer"},
		{"tool_calls not list", `turns: [{tool_calls: {name: a}}]`, "turns[0].tool_calls: must be a list, got a mapping"},
		{"empty id", `turns: [{tool_calls: [{name: a, id: ""}]}]`, "turns[0].tool_calls[0].id: must be a non-empty string"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestParseCollectsEveryProblem(t *testing.T) {
	_, err := Parse([]byte("turns:\n  - {}\n  - tool_calls: [{}]\n"))
	var se *Error
	if !errors.As(err, &se) || len(se.Problems) != 2 {
		t.Fatalf("err = %v", err)
	}
	if se.Problems[0] != "turns[0]: needs text or tool_calls" || se.Problems[1] != "turns[1].tool_calls[0].name: required" {
		t.Fatalf("problems = %q", se.Problems)
	}
}

func TestScriptArgumentsAsJSONStringAndUsage(t *testing.T) {
	s, err := Parse([]byte(`turns: [{tool_calls: [{id: c1, name: a, arguments: '{"x": [1, 2]}'}], usage: {input_tokens: 1000, output_tokens: 50}}]`))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := New(s)
	r, _ := p.Chat(context.Background(), model.Request{})
	if r.ToolCalls[0].ID != "c1" || string(r.ToolCalls[0].Arguments) != `{"x":[1,2]}` || r.Usage != (model.Usage{InputTokens: 1000, OutputTokens: 50}) {
		t.Fatalf("response = %+v %s", r, r.ToolCalls[0].Arguments)
	}
}

func TestLoadErrorsNameTheKey(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil || !strings.HasPrefix(err.Error(), "model.script.path: ") {
		t.Fatalf("missing file: %v", err)
	}
	empty := filepath.Join(dir, "empty.yaml")
	_ = os.WriteFile(empty, nil, 0o600)
	if _, err := Load(empty); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty file: %v", err)
	}
}

func TestCanceledContext(t *testing.T) {
	p, _ := Load(filepath.Join("testdata", "contract.yaml"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Chat(ctx, model.Request{}); model.KindOf(err) != model.ErrorCanceled {
		t.Fatalf("err = %v", err)
	}
	if p.Remaining() != 3 {
		t.Fatal("a canceled call used a turn")
	}
}

// failing is a provider that fails once with a given error, then defers to next.
type failing struct {
	next model.Provider
	err  error
	used bool
}

func (f *failing) Name() string { return "failing" }
func (f *failing) Chat(ctx context.Context, req model.Request) (*model.Response, error) {
	if !f.used {
		f.used = true
		return nil, f.err
	}
	return f.next.Chat(ctx, req)
}

func TestRecordThenReplay(t *testing.T) {
	p, _ := Load(filepath.Join("testdata", "contract.yaml"))
	clock := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	src := &failing{next: p, err: &model.Error{Provider: "openai", Kind: model.ErrorTransient, Status: 503, Err: errors.New("busy")}}
	rec, err := model.NewRecorder(src, func() time.Time { clock = clock.Add(time.Second); return clock })
	if err != nil {
		t.Fatal(err)
	}
	req := model.Request{System: "secret-looking policy", Messages: []model.Message{{Role: model.RoleUser, Content: "go"}},
		Tools: []model.ToolDef{{Name: "get_resource"}}}
	var originals []*model.Response
	for range 4 {
		r, _ := rec.Chat(context.Background(), req)
		originals = append(originals, r)
	}
	recording := rec.Recording()
	data, err := json.Marshal(recording)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "secret-looking policy") || !strings.Contains(string(data), `"tools":["get_resource"]`) {
		t.Fatalf("recording = %s", data)
	}
	var back model.Recording
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	rp, err := NewReplay(back)
	if err != nil {
		t.Fatal(err)
	}
	_, err = rp.Chat(context.Background(), model.Request{})
	var me *model.Error
	if !errors.As(err, &me) || me.Kind != model.ErrorTransient || me.Status != 503 {
		t.Fatalf("replayed error = %v", err)
	}
	for i := 1; i < 4; i++ {
		r, err := rp.Chat(context.Background(), model.Request{})
		if err != nil {
			t.Fatal(err)
		}
		o := originals[i]
		if r.Text != o.Text || len(r.ToolCalls) != len(o.ToolCalls) || r.Usage != o.Usage {
			t.Fatalf("exchange %d: replay %+v, original %+v", i, r, o)
		}
		for j := range r.ToolCalls {
			if string(r.ToolCalls[j].Arguments) != string(o.ToolCalls[j].Arguments) {
				t.Fatalf("exchange %d call %d differs", i, j)
			}
		}
	}
	if _, err := rp.Chat(context.Background(), model.Request{}); !errors.Is(err, ErrReplayExhausted) {
		t.Fatalf("past the end: %v", err)
	}
	if _, err := NewReplay(model.Recording{Version: 9}); err == nil || !strings.Contains(err.Error(), "version") {
		t.Fatalf("bad version: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"contract.yaml", "contract.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, seed := range []string{``, `turns: []`, `turns: [{text: a}]`, `turns: [{tool_calls: [{name: x, arguments: {a: [1, {b: c}]}}]}]`,
		`turns: [{tool_calls: [{name: x, arguments: '{"a":1}'}]}]`, `{"turns": [{"text": "\u0000"}]}`, "turns:\n - &a {text: x}\n - *a\n",
		`turns: [{usage: {input_tokens: 99999999999999999999}}]`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			var se *Error
			if errors.As(err, &se) && len(se.Problems) == 0 {
				t.Fatal("script error without problems")
			}
			return
		}
		if len(s.Turns) == 0 {
			t.Fatal("valid script without turns")
		}
		for i, turn := range s.Turns {
			if turn.Text == "" && len(turn.ToolCalls) == 0 {
				t.Fatalf("turn %d is empty but valid", i)
			}
			for _, c := range turn.ToolCalls {
				if c.Name == "" || c.ID == "" || !json.Valid(c.Arguments) || c.Arguments[0] != '{' {
					t.Fatalf("turn %d: invalid call accepted: %+v %s", i, c, c.Arguments)
				}
			}
		}
	})
}

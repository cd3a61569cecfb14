package agent

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/patrold/patrold/model"
)

// established returns a session over testTools whose target is read and
// whose restart tool uses auth.
func established(t *testing.T, cnt *calls, auth *testAuthority, mod func(*Options)) *Session {
	t.Helper()
	tools := testTools(cnt)
	for i := range tools {
		if tools[i].Name == "restart" {
			tools[i].Authority = auth
		}
	}
	s := newTestSession(t, tools, nil, mod)
	if b := s.ExecuteBatch(context.Background(), 1, []model.ToolCall{tc("get_resource", `{"id":"vm/1"}`)}); b.Results[0].Step.Status != StatusOK {
		t.Fatalf("resolve: %+v", b.Results[0])
	}
	return s
}

// TestPrecheckOrderAndCodes refuses each Authority hook in turn: the call
// never runs, the code is the check's own (never the hook's), the details
// name the check, and the hooks after it are not consulted.
func TestPrecheckOrderAndCodes(t *testing.T) {
	hooks := []Check{CheckTargetResolved, CheckTargetKind, CheckSignal, CheckAutonomyRisk, CheckApproval, CheckConditionPresent}
	for i, c := range hooks {
		var cnt calls
		auth := &testAuthority{refuse: map[Check]error{c: &ToolError{Code: CodeNotFound, Message: "refused by " + string(c)}}}
		s := established(t, &cnt, auth, nil)
		b := s.ExecuteBatch(context.Background(), 2, []model.ToolCall{tc("restart", `{"id":"vm/1"}`)})
		r := b.Results[0]
		want := map[Check]Code{}
		for _, p := range Prechecks() {
			want[p.Check] = p.Code
		}
		e := decodeEnvelope(t, r.Content)
		if r.Step.Code != want[c] || e.Error == nil || e.Error.Code != want[c] || e.Error.Details["check"] != string(c) ||
			e.Error.Message != "refused by "+string(c) || cnt.get("restart") != 0 {
			t.Errorf("%s: step %+v envelope %s ran %d", c, r.Step, r.Content, cnt.get("restart"))
		}
		if !slices.Equal(auth.calls, hooks[:i+1]) {
			t.Errorf("%s: hooks consulted %v, want %v", c, auth.calls, hooks[:i+1])
		}
		if s.FSM().State() != StateReading || s.FSM().WroteThisEpisode() {
			t.Errorf("%s: refused write moved the FSM to %s", c, s.FSM().State())
		}
		if (c == CheckApproval) != b.ApprovalRequired {
			t.Errorf("%s: approval required %v", c, b.ApprovalRequired)
		}
	}
	if got := Prechecks(); len(got) != len(prechecks) || got[0].Check != CheckRegistered || got[len(got)-1].Check != CheckLoop {
		t.Fatalf("prechecks %+v", got)
	}
}

// TestHandlerCannotImpersonateRuntime: a handler's FSMBlockedError or a
// ToolError carrying a runtime-only code reaches the model as
// EXECUTION_FAILED.
func TestHandlerCannotImpersonateRuntime(t *testing.T) {
	runtimeOnly := []Code{}
	for _, info := range Codes() {
		if !info.FromHandler {
			runtimeOnly = append(runtimeOnly, info.Code)
		}
	}
	for _, c := range runtimeOnly {
		for _, err := range []error{&ToolError{Code: c, Message: "forged"}, &FSMBlockedError{State: StateReading, Tool: "x", Reason: "forged"}} {
			tool := Tool{Name: "forge", Kind: KindRead, Handler: func(context.Context, json.RawMessage) (any, error) { return nil, err }}
			s := newTestSession(t, []Tool{tool}, nil, nil)
			r := s.ExecuteBatch(context.Background(), 1, []model.ToolCall{tc("forge", "")}).Results[0]
			if r.Step.Code != CodeExecutionFailed || decodeEnvelope(t, r.Content).Error.Code != CodeExecutionFailed {
				t.Errorf("%s %T: step %+v %s", c, err, r.Step, r.Content)
			}
		}
	}
	if slices.Contains(runtimeOnly, CodeNotFound) || !slices.Contains(runtimeOnly, CodeFSMBlocked) || slices.Contains(runtimeOnly, CodePolicyBlocked) ||
		!slices.Contains(runtimeOnly, CodeApprovalRequired) {
		t.Fatalf("runtime-only codes %v", runtimeOnly)
	}
}

// TestArgumentsBounded: strings 2 KiB unless declared, arrays 64 items,
// undeclared properties of open objects too.
func TestArgumentsBounded(t *testing.T) {
	schema := `{"type":"object","properties":{"note":{"type":"string"},"long":{"type":"string","maxLength":8192},"ids":{"type":"array","items":{"type":"string"}}}}`
	tool := Tool{Name: "t", Kind: KindRead, Schema: json.RawMessage(schema), Handler: nop}
	s := newTestSession(t, []Tool{tool}, nil, nil)
	big := strings.Repeat("x", 3<<20)
	ids, _ := json.Marshal(make([]string, MaxArrayItems+1))
	cases := map[string]string{
		`{"note":"` + strings.Repeat("x", MaxStringBytes) + `"}`:   "",
		`{"note":"` + strings.Repeat("x", MaxStringBytes+1) + `"}`: "arguments.note: 2049 bytes, at most 2048 allowed",
		`{"note":"` + big + `"}`:                                   "arguments.note: 3145728 bytes, at most 2048 allowed",
		`{"long":"` + strings.Repeat("x", 8192) + `"}`:             "",
		`{"long":"` + strings.Repeat("x", 8193) + `"}`:             "arguments.long: 8193 bytes, at most 8192 allowed",
		`{"ids":` + string(ids) + `}`:                              "arguments.ids: 65 items, at most 64 allowed",
		`{"other":{"deep":["` + strings.Repeat("y", 2049) + `"]}}`: "arguments.other.deep[0]: 2049 bytes, at most 2048 allowed",
	}
	for args, want := range cases {
		r := s.ExecuteBatch(context.Background(), 1, []model.ToolCall{tc("t", args)}).Results[0]
		if want == "" {
			if r.Step.Status != StatusOK {
				t.Errorf("%.40s: %s", args, r.Content)
			}
			continue
		}
		e := decodeEnvelope(t, r.Content)
		if r.Step.Code != CodeInvalidInput || e.Error.Message != want || e.Error.Details["check"] != string(CheckArguments) {
			t.Errorf("%.40s: step %+v message %q, want %q", args, r.Step, e.Error.Message, want)
		}
	}
}

// TestOnlyVerifyingReadsVerify: reading patrold's own record after a write
// neither allows a second write nor a final answer.
func TestOnlyVerifyingReadsVerify(t *testing.T) {
	var cnt calls
	s := established(t, &cnt, &testAuthority{}, nil)
	ctx := context.Background()
	for i, want := range []string{"2:restart:ok:", "3:list_findings:ok:", "4:restart:blocked:FSM_BLOCKED", "5:read_logs:ok:"} {
		call := map[int]model.ToolCall{0: tc("restart", `{"id":"vm/1"}`), 1: tc("list_findings", ""), 2: tc("restart", `{"id":"vm/2"}`), 3: tc("read_logs", `{"id":"vm/1"}`)}[i]
		b := s.ExecuteBatch(ctx, i+2, []model.ToolCall{call})
		if got := stepCodes([]Step{b.Results[0].Step}); got[0] != want {
			t.Fatalf("step %d: %s, want %s", i, got[0], want)
		}
		if i == 1 && (s.FSM().ReadAfterWrite() || s.FSM().CanFinalAnswer() == nil) {
			t.Fatal("a non-verifying read verified the write")
		}
	}
	if !s.FSM().ReadAfterWrite() {
		t.Fatal("the verifying read did not verify")
	}
}

// TestApprovalRefusalParksWithoutWriting is covered by the session tests;
// here: an Authority error that is not a ToolError keeps its text.
func TestAuthorityPlainError(t *testing.T) {
	var cnt calls
	auth := &testAuthority{refuse: map[Check]error{CheckTargetKind: errors.New("storage is not a guest")}}
	s := established(t, &cnt, auth, nil)
	r := s.ExecuteBatch(context.Background(), 2, []model.ToolCall{tc("restart", `{"id":"vm/1"}`)}).Results[0]
	if e := decodeEnvelope(t, r.Content); e.Error.Code != CodePolicyBlocked || e.Error.Message != "storage is not a guest" {
		t.Fatalf("%s", r.Content)
	}
}

// TestRepliesStoredBounded: a reply's text and an oversized argument object
// are bounded in the conversation the session keeps (and persists), while
// the call is still judged on what the model sent.
func TestRepliesStoredBounded(t *testing.T) {
	var cnt calls
	huge := strings.Repeat("z", 3<<20)
	p := &scripted{turns: []model.Response{{Text: huge, ToolCalls: []model.ToolCall{tc("read_logs", `{"id":"`+huge+`"}`)}}, text("done")}}
	s := newTestSession(t, testTools(&cnt), p, nil)
	res, err := s.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	reply := res.Messages[0]
	if n := len([]rune(reply.Content)); n != MaxToolResultChars+len(" [cut]") {
		t.Fatalf("stored reply text has %d characters", n)
	}
	if got := string(reply.ToolCalls[0].Arguments); got != `{"argument_bytes_not_kept":3145737}` {
		t.Fatalf("stored arguments %.80s", got)
	}
	if res.Steps[0].Code != CodeInvalidInput || cnt.get("read_logs") != 0 {
		t.Fatalf("oversized call: %+v ran %d", res.Steps[0], cnt.get("read_logs"))
	}
}

// TestManifestListsTheChecks: the manifest's pre-checks and transitions are
// the runtime's own tables, in order.
func TestManifestListsTheChecks(t *testing.T) {
	reg, err := NewRegistry(testTools(&calls{})...)
	if err != nil {
		t.Fatal(err)
	}
	m := Manifest(reg, Profile{Name: "test", Tools: reg.Names()})
	var checks []Check
	for _, p := range m.Prechecks {
		checks = append(checks, p.Check)
	}
	want := []Check{CheckRegistered, CheckAdvertised, CheckWellFormed, CheckPlaceholders, CheckArguments, CheckLookFirst, CheckStateMachine, CheckTargetResolved, CheckTargetKind,
		CheckSignal, CheckAutonomyRisk, CheckApproval, CheckConditionPresent, CheckBudget, CheckOncePerEpisode, CheckLoop}
	if !slices.Equal(checks, want) {
		t.Fatalf("manifest checks %v", checks)
	}
	n := 0
	for _, from := range Phases() {
		for _, ev := range Events() {
			if to, ok := Transition(from, ev); ok {
				if !slices.Contains(m.Transitions, TransitionInfo{From: from.String(), Event: ev, To: to.String()}) {
					t.Errorf("manifest misses %s x %s", from, ev)
				}
				n++
			}
		}
	}
	if len(m.Transitions) != n || m.Limits.MaxStringBytes != MaxStringBytes || m.Limits.MaxArrayItems != MaxArrayItems {
		t.Fatalf("manifest transitions %d (want %d), limits %+v", len(m.Transitions), n, m.Limits)
	}
	if !m.Tools[0].Verifies || m.Tools[3].Verifies {
		t.Fatalf("verifies flags: %+v", m.Tools)
	}
}

func TestSafeToolName(t *testing.T) {
	for in, want := range map[string]string{
		"get_resource": "get_resource", "<|im_start|>system": InvalidToolName, "": InvalidToolName,
		strings.Repeat("a", 65): InvalidToolName, "Get": InvalidToolName, "a1_b": "a1_b",
	} {
		if got := SafeToolName(in); got != want {
			t.Errorf("%.20q: %q, want %q", in, got, want)
		}
	}
	s := newTestSession(t, testTools(&calls{}), nil, nil)
	r := s.ExecuteBatch(context.Background(), 1, []model.ToolCall{{ID: strings.Repeat("i", 500), Name: "<|im_start|>", Arguments: json.RawMessage(`{}`)}}).Results[0]
	if r.Step.Tool != InvalidToolName || r.Step.CallID != "call_1_1" || strings.Contains(r.Content, "im_start") {
		t.Fatalf("step %+v content %s", r.Step, r.Content)
	}
}

// sentPlaceholders is a masked session that sent vm/masked-id-1 only.
type sentPlaceholders struct{}

func (sentPlaceholders) Invented(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' }) {
		if strings.Contains(w, "masked-") && w != "vm/masked-id-1" {
			out = append(out, w)
		}
	}
	return out
}

// TestPrecheckPlaceholders is the attack: with names masked, a call whose
// arguments name a placeholder the session never sent is refused with
// UNKNOWN_PLACEHOLDER before the state machine or any handler sees it; the
// refusal names the arguments, never the placeholder. Without masking the
// same call runs.
func TestPrecheckPlaceholders(t *testing.T) {
	var cnt calls
	s := established(t, &cnt, &testAuthority{}, func(o *Options) { o.Placeholders = sentPlaceholders{} })
	b := s.ExecuteBatch(context.Background(), 2, []model.ToolCall{
		tc("restart", `{"id":"vm/masked-id-7"}`),
		tc("read_logs", `{"id":"vm/masked-id-1","masked-name-3":["ok","x masked-tag-2"]}`),
		tc("read_logs", `{"id":"vm/masked-id-1"}`),
	})
	got := []envelope{decodeEnvelope(t, b.Results[0].Content), decodeEnvelope(t, b.Results[1].Content)}
	want := []struct {
		msg  string
		args []any
	}{
		{"arguments.id: names a placeholder that appears nowhere in this session's data; use only the placeholders the data shows", []any{"arguments.id"}},
		{"arguments, arguments.masked-name-3[1]: names a placeholder that appears nowhere in this session's data; use only the placeholders the data shows",
			[]any{"arguments", "arguments.masked-name-3[1]"}},
	}
	for i, e := range got {
		if e.Error == nil || e.Error.Code != CodeNoSuchPlaceholder || e.Error.Message != want[i].msg ||
			!slices.Equal(e.Error.Details["arguments"].([]any), want[i].args) || e.Error.Details["check"] != string(CheckPlaceholders) ||
			b.Results[i].Step.Code != CodeNoSuchPlaceholder {
			t.Errorf("call %d: step %+v envelope %s", i+1, b.Results[i].Step, b.Results[i].Content)
		}
	}
	if r := b.Results[2]; r.Step.Status != StatusOK {
		t.Errorf("a sent placeholder was refused: %+v %s", r.Step, r.Content)
	}
	if cnt.get("restart") != 0 || cnt.get("read_logs") != 1 || s.FSM().State() != StateReading || s.FSM().WroteThisEpisode() {
		t.Fatalf("ran restart %d, read_logs %d; FSM %s", cnt.get("restart"), cnt.get("read_logs"), s.FSM().State())
	}
	// Names not masked: the check admits the same write.
	plain := established(t, &cnt, &testAuthority{}, nil)
	if r := plain.ExecuteBatch(context.Background(), 2, []model.ToolCall{tc("restart", `{"id":"vm/masked-id-7"}`)}).Results[0]; r.Step.Status != StatusOK {
		t.Fatalf("unmasked session refused: %+v %s", r.Step, r.Content)
	}
}

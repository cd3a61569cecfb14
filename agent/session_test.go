package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/patrold/patrold/model"
)

func TestLookBeforeAsking(t *testing.T) {
	var cnt calls
	ask := tc("ask_operator", "")
	p := &scripted{turns: []model.Response{turn(ask), turn(ask), turn(ask), text("ok")}}
	s := newTestSession(t, testTools(&cnt), p, nil)
	res, err := s.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1:ask_operator:blocked:LOOK_FIRST", "2:ask_operator:blocked:LOOK_FIRST", "3:ask_operator:ok:"}
	if got := stepCodes(res.Steps); !slices.Equal(got, want) {
		t.Fatalf("steps %v, want %v", got, want)
	}
	if cnt.get("ask_operator") != 1 {
		t.Fatalf("question asked %d times", cnt.get("ask_operator"))
	}
	// A LOOK_FIRST refusal does not make the next turn text-only.
	for i, r := range p.requests() {
		if len(r.Tools) == 0 {
			t.Fatalf("turn %d was text-only", i+1)
		}
	}

	// After a real tool was tried the question goes straight through, and
	// its siblings are skipped.
	var cnt2 calls
	p2 := &scripted{turns: []model.Response{
		turn(tc("read_logs", `{"id":"x"}`)),
		turn(tc("get_resource", `{"id":"x"}`), tc("ask_operator", ""), tc("read_logs", `{"id":"y"}`)),
	}}
	s2 := newTestSession(t, testTools(&cnt2), p2, func(o *Options) { o.MaxTurns = 2 })
	res2, err := s2.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want2 := []string{"1:read_logs:ok:", "2:get_resource:skipped:SKIPPED", "2:ask_operator:ok:", "2:read_logs:skipped:SKIPPED"}
	if got := stepCodes(res2.Steps); !slices.Equal(got, want2) {
		t.Fatalf("steps %v, want %v", got, want2)
	}
	if cnt2.get("get_resource") != 0 || cnt2.get("read_logs") != 1 {
		t.Fatal("a sibling of the operator question ran")
	}
}

func TestFinalAnswerNeedsVerification(t *testing.T) {
	var cnt calls
	p := &scripted{turns: []model.Response{
		turn(tc("get_resource", `{"id":"vm/1"}`)),
		turn(tc("restart", `{"id":"vm/1"}`)),
		text("fixed it"),
		turn(tc("read_logs", `{"id":"vm/1"}`)),
		text("fixed and verified"),
	}}
	s := newTestSession(t, testTools(&cnt), p, nil)
	res, err := s.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.FinalAnswerBlocked != 1 || res.FinalAnswer != "fixed and verified" || !res.Verified || res.Unverified {
		t.Fatalf("result %+v", res)
	}
	reqs := p.requests()
	prompt := reqs[3].Messages[len(reqs[3].Messages)-1]
	if prompt.Role != model.RoleUser || prompt.Content != DefaultVerificationPrompt {
		t.Fatalf("verification prompt not injected: %+v", prompt)
	}
	if len(reqs[3].Tools) == 0 {
		t.Fatal("the turn after a refused final answer must offer tools")
	}
}

func TestTurnLimitUnverified(t *testing.T) {
	var cnt calls
	p := &scripted{turns: []model.Response{
		turn(tc("get_resource", `{"id":"vm/1"}`)),
		turn(tc("restart", `{"id":"vm/1"}`)),
		text("fixed"), text("fixed, really"), text("trust me"),
	}}
	s := newTestSession(t, testTools(&cnt), p, func(o *Options) { o.MaxTurns = 5 })
	res, err := s.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != StopTurnLimit || res.Verified || !res.Unverified || res.FinalAnswer != "" ||
		res.FinalAnswerBlocked != 3 || res.FinalState != StateVerifying || res.Turns != 5 {
		t.Fatalf("result %+v", res)
	}
}

func TestBudgets(t *testing.T) {
	var cnt calls
	evidence, err := NewCallBudget("evidence", 2, func(_ string, k ToolKind, _ WriteTarget) bool { return k == KindRead })
	if err != nil {
		t.Fatal(err)
	}
	p := &scripted{turns: []model.Response{
		turn(tc("read_logs", `{"id":"a"}`), tc("read_logs", `{"id":"b"}`), tc("read_logs", `{"id":"c"}`), tc("get_resource", `{"id":"a"}`)),
		turn(tc("read_logs", `{"id":"d"}`)), turn(tc("read_logs", `{"id":"e"}`)),
	}}
	stopAfter := 2
	s := newTestSession(t, testTools(&cnt), p, func(o *Options) {
		o.Budgets = []*CallBudget{evidence}
		o.TurnBudget = func(turn int, u model.Usage) error {
			if turn >= stopAfter {
				return fmt.Errorf("%d turns used, %d input tokens", turn, u.InputTokens)
			}
			return nil
		}
	})
	res, err := s.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1:read_logs:ok:", "1:read_logs:ok:", "1:read_logs:blocked:BUDGET_EXHAUSTED", "1:get_resource:ok:", "2:read_logs:blocked:BUDGET_EXHAUSTED"}
	if got := stepCodes(res.Steps); !slices.Equal(got, want) {
		t.Fatalf("steps %v, want %v", got, want)
	}
	if res.StopReason != StopBudgetExhausted || res.Turns != 2 || len(p.requests()) != 2 || !strings.HasPrefix(res.BudgetError, "BUDGET_EXHAUSTED") {
		t.Fatalf("result %s turns %d requests %d %q", res.StopReason, res.Turns, len(p.requests()), res.BudgetError)
	}
	if evidence.Used() != 2 || evidence.Remaining() != 0 {
		t.Fatalf("budget used %d", evidence.Used())
	}
}

func TestApprovalStopsAndResumes(t *testing.T) {
	var cnt calls
	auth := &testAuthority{refuse: map[Check]error{
		CheckApproval: NewToolError(CodeExecutionFailed, "restart of vm/1 waits for approval").With("approval_id", "ap1"),
	}}
	tools := replace(testTools(&cnt), Tool{Name: "restart", Kind: KindWrite, Target: TargetInfrastructure, Authority: auth,
		Handler: func(context.Context, json.RawMessage) (any, error) {
			t.Error("the handler ran although approval is required")
			return nil, nil
		}})
	p := &scripted{turns: []model.Response{turn(tc("get_resource", `{"id":"vm/1"}`)), turn(tc("restart", `{}`)), text("never")}}
	s := newTestSession(t, tools, p, nil)
	res, err := s.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	last := res.Steps[len(res.Steps)-1]
	if res.StopReason != StopApprovalRequired || last.Status != StatusApprovalRequired || last.StateAfter != StateReading || res.Wrote {
		t.Fatalf("result %s step %+v", res.StopReason, last)
	}
	e := decodeEnvelope(t, res.Messages[len(res.Messages)-1].Content)
	if e.Error.Code != CodeApprovalRequired || e.Error.Details["approval_id"] != "ap1" {
		t.Fatalf("envelope %+v", e.Error)
	}
	// Persist, resume in a new session: the target is still established.
	b, _ := json.Marshal(s.FSM())
	var f FSM
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	s2 := newTestSession(t, testTools(&cnt), &scripted{}, func(o *Options) { o.FSM = &f })
	batch := s2.ExecuteBatch(context.Background(), 1, []model.ToolCall{tc("restart", `{"id":"vm/1"}`)})
	if st := batch.Results[0].Step; st.Status != StatusOK || st.StateBefore != StateReading || st.StateAfter != StateVerifying {
		t.Fatalf("resumed write %+v", st)
	}
}

func TestRefusalsAndHandlerErrors(t *testing.T) {
	var cnt calls
	var flaky, once, missing atomic.Int32
	tools := append(testTools(&cnt),
		Tool{Name: "flaky", Kind: KindRead, Idempotent: true, Handler: func(context.Context, json.RawMessage) (any, error) {
			if flaky.Add(1) == 1 {
				return nil, errors.New("connection reset")
			}
			return "fine", nil
		}},
		Tool{Name: "once", Kind: KindRead, Handler: func(context.Context, json.RawMessage) (any, error) {
			once.Add(1)
			return nil, errors.New("connection reset")
		}},
		Tool{Name: "missing", Kind: KindRead, Idempotent: true, Handler: func(context.Context, json.RawMessage) (any, error) {
			missing.Add(1)
			return nil, NewToolError(CodeNotFound, "no such vm")
		}},
		Tool{Name: "slow", Kind: KindRead, Timeout: 20 * time.Millisecond, Handler: func(ctx context.Context, _ json.RawMessage) (any, error) {
			time.Sleep(200 * time.Millisecond)
			return "late", nil
		}},
		Tool{Name: "bogus", Kind: KindRead, Handler: func(context.Context, json.RawMessage) (any, error) {
			return nil, &ToolError{Code: CodeLoopDetected, Message: "handlers may not emit runtime codes"}
		}},
		Tool{Name: "panics", Kind: KindRead, Handler: func(context.Context, json.RawMessage) (any, error) { panic("boom") }},
		Tool{Name: "huge", Kind: KindRead, Handler: func(context.Context, json.RawMessage) (any, error) {
			return strings.Repeat("é\"", 20000), nil
		}},
		Tool{Name: "hidden", Kind: KindRead, Handler: nop},
	)
	reg, err := NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	profile := Profile{Name: "test", Tools: slices.DeleteFunc(names(tools), func(n string) bool { return n == "hidden" })}
	s, err := NewSession(Options{Registry: reg, Profile: profile})
	if err != nil {
		t.Fatal(err)
	}
	batch := s.ExecuteBatch(context.Background(), 1, []model.ToolCall{
		tc("nope", ""), tc("hidden", ""), tc("read_logs", `{"id":5}`), tc("flaky", ""), tc("once", ""),
		tc("missing", ""), tc("slow", ""), tc("bogus", ""), tc("panics", ""), tc("huge", ""),
	})
	want := []string{"1:nope:blocked:UNKNOWN_TOOL", "1:hidden:blocked:TOOL_NOT_ADVERTISED", "1:read_logs:blocked:INVALID_INPUT",
		"1:flaky:ok:", "1:once:error:EXECUTION_FAILED", "1:missing:error:NOT_FOUND", "1:slow:error:TIMEOUT",
		"1:bogus:error:EXECUTION_FAILED", "1:panics:error:EXECUTION_FAILED", "1:huge:ok:"}
	var steps []Step
	for _, r := range batch.Results {
		steps = append(steps, r.Step)
		if e := decodeEnvelope(t, r.Content); e.OK != (r.Step.Status == StatusOK) {
			t.Errorf("%s: ok=%v status %s", r.Step.Tool, e.OK, r.Step.Status)
		}
	}
	if got := stepCodes(steps); !slices.Equal(got, want) {
		t.Fatalf("steps %v\nwant  %v", got, want)
	}
	if flaky.Load() != 2 || once.Load() != 1 || missing.Load() != 1 {
		t.Fatalf("attempts %d %d %d: only idempotent tools retry, never on a structured refusal", flaky.Load(), once.Load(), missing.Load())
	}
	if e := decodeEnvelope(t, batch.Results[2].Content); !strings.Contains(e.Error.Message, "arguments.id: must be a string") {
		t.Fatalf("invalid input message %q", e.Error.Message)
	}
	huge := batch.Results[9].Content
	if n := len([]rune(huge)); n > MaxToolResultChars || n < MaxToolResultChars-10 {
		t.Fatalf("truncated result has %d characters", n)
	}
	if e := decodeEnvelope(t, huge); !e.Truncated {
		t.Fatal("huge result not flagged truncated")
	}
}

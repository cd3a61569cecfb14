package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/patrold/patrold/model"
)

// Step records one tool call (the steps of docs/ASSISTANT.md#transcript).
type Step struct {
	Turn        int      `json:"turn"`
	CallID      string   `json:"call_id,omitempty"`
	Tool        string   `json:"tool"`
	Kind        ToolKind `json:"kind"`
	Status      Status   `json:"status"`
	Code        Code     `json:"code,omitempty"`
	StateBefore State    `json:"state_before"`
	StateAfter  State    `json:"state_after"`
}

// CallResult is one processed call: its step record and the JSON result
// the model receives.
type CallResult struct {
	Step    Step
	Content string
}

// Batch is the outcome of one model turn's tool calls, in provider order.
type Batch struct {
	Results []CallResult
	// LoopDetected: a call was refused as a repeat; the next turn offers the
	// read tools only.
	LoopDetected bool
	// AllBlocked: every call was refused by a runtime check (LOOK_FIRST
	// aside); the next turn offers the read tools only.
	AllBlocked bool
	// ApprovalRequired: a write is waiting for an operator approval.
	ApprovalRequired bool
}

// ExecuteBatch runs one turn's tool calls through the three phases with the
// session's full profile advertised. Playbooks (the no-model driver) use it
// directly; Run uses it for every model turn.
func (s *Session) ExecuteBatch(ctx context.Context, turn int, calls []model.ToolCall) Batch {
	return s.executeBatch(ctx, turn, calls, nil)
}

// executeBatch runs one batch; advertised, when not nil, narrows the
// profile for this turn (a restricted turn offers the read tools only).
func (s *Session) executeBatch(ctx context.Context, turn int, tcs []model.ToolCall, advertised func(string) bool) Batch {
	calls := make([]*call, len(tcs))
	for i, tc := range tcs {
		if tc.ID == "" || len(tc.ID) > maxCallIDBytes {
			tc.ID = fmt.Sprintf("call_%d_%d", turn, i+1)
		}
		tc.Name = SafeToolName(tc.Name)
		calls[i] = &call{tc: tc}
	}
	s.precheck(ctx, calls, &judgeInput{advertised: advertised, now: s.now()})
	s.execute(ctx, calls)
	return s.postprocess(turn, calls)
}

// InvalidToolName stands for a tool name no tool can have (it breaks the
// name pattern): such a name is never stored, shown or sent back as the
// model wrote it. It is refused as UNKNOWN_TOOL.
const InvalidToolName = "(invalid tool name)"

// maxCallIDBytes bounds a provider's call id kept in records.
const maxCallIDBytes = 128

// SafeToolName returns name when a tool could be registered under it,
// else InvalidToolName.
func SafeToolName(name string) string {
	if toolName.MatchString(name) {
		return name
	}
	return InvalidToolName
}

// postprocess applies results sequentially in provider order: FSM
// transitions, loop resets, metrics, step records and the JSON results.
func (s *Session) postprocess(turn int, calls []*call) Batch {
	var b Batch
	blocked := 0
	lookFirst := false
	for _, c := range calls {
		step := Step{Turn: turn, CallID: c.tc.ID, Tool: c.tc.Name, Kind: c.kind, StateBefore: c.stateBefore}
		var content string
		if c.refusal != nil {
			step.Code = c.refusal.Code
			step.Status = StatusBlocked
			switch c.refusal.Code {
			case CodeSkipped:
				step.Status = StatusSkipped
			case CodeApprovalRequired:
				step.Status = StatusApprovalRequired
			}
			b.ApprovalRequired = b.ApprovalRequired || step.Status == StatusApprovalRequired
			content = encodeError(c.refusal)
			b.LoopDetected = b.LoopDetected || c.refusal.Code == CodeLoopDetected
			lookFirst = lookFirst || c.refusal.Code == CodeLookFirst
			if step.Status == StatusBlocked {
				blocked++
			}
		} else {
			step.Code, step.Status, content = s.applyResult(c)
			b.ApprovalRequired = b.ApprovalRequired || step.Status == StatusApprovalRequired
		}
		step.StateAfter = s.fsm.State()
		s.metrics.toolCall(c.kind, step.Status)
		s.steps = append(s.steps, step)
		b.Results = append(b.Results, CallResult{Step: step, Content: content})
	}
	b.AllBlocked = len(calls) > 0 && blocked == len(calls) && !lookFirst
	return b
}

// applyResult moves the FSM for an executed call and renders its result.
func (s *Session) applyResult(c *call) (Code, Status, string) {
	now := s.now()
	if c.kind != KindUserInput {
		s.realTried = true
	}
	fsmMoves := c.kind != KindWrite || c.target == TargetInfrastructure
	if c.infraWrite() {
		// The handler ran: successful or not, the write counts as executed.
		s.fsm.MarkExecuted(episodeKey(c))
		s.loops.reset()
	}
	if c.err == nil {
		if fsmMoves {
			s.fsm.OnToolSuccessVerifies(c.kind, c.tc.Name, c.entry.tool.Verifies, now)
		}
		return "", StatusOK, encodeOK(c.result)
	}
	code := codeOf(c.err)
	if fsmMoves {
		s.fsm.OnToolFailure(c.kind, c.tc.Name, now)
	}
	s.log.Debug("tool call failed", "tool", c.tc.Name, "code", string(code), "err", c.err)
	return code, statusFor(code), encodeError(toolErrorFor(code, c.err))
}

// toolErrorFor renders a handler error for the model: a ToolError keeps its
// message and details; any other error is reported as EXECUTION_FAILED with
// its text.
func toolErrorFor(code Code, err error) *ToolError {
	var te *ToolError
	if errors.As(err, &te) && te.Code == code {
		return &ToolError{Code: code, Message: te.Message, Details: te.Details}
	}
	return &ToolError{Code: code, Message: err.Error()}
}

package agent

import (
	"time"

	"github.com/patrold/patrold/model"
)

// call is one tool call as it moves through the three phases.
type call struct {
	tc          model.ToolCall
	entry       *entry // nil when the tool is not registered
	kind        ToolKind
	target      WriteTarget
	stateBefore State
	refusal     *ToolError // set by pre-check: the call does not run
	loopKey     string
	// filled by execution
	result any
	err    error
}

func (c *call) admitted() bool { return c.refusal == nil }

func (c *call) infraWrite() bool { return c.kind == KindWrite && c.target == TargetInfrastructure }

// precheck judges every call of a batch, sequentially in provider order,
// before any runs. An operator question is judged first: when it is
// admitted it runs alone and every sibling is SKIPPED.
func (s *Session) precheck(calls []*call, advertised bool, now time.Time) {
	for _, c := range calls {
		c.entry = s.reg.tools[c.tc.Name]
		c.kind, c.target = s.reg.Classify(c.tc.Name, c.tc.Arguments)
	}
	if q := firstQuestion(calls); q != nil {
		s.judge(q, advertised, now)
		if q.admitted() {
			for _, c := range calls {
				if c != q {
					c.stateBefore = s.fsm.State()
					c.refusal = NewToolError(CodeSkipped, "not run: an operator question in the same turn runs alone; call it again after the answer")
				}
			}
			return
		}
	}
	for _, c := range calls {
		if c.stateBefore == "" {
			s.judge(c, advertised, now)
		}
	}
}

func firstQuestion(calls []*call) *call {
	for _, c := range calls {
		if c.entry != nil && c.kind == KindUserInput {
			return c
		}
	}
	return nil
}

// judge runs the ordered checks on one call and, when it is admitted,
// reserves what it uses: a loop count, budget slots and, for an
// infrastructure write, the FSM's WRITING state.
func (s *Session) judge(c *call, advertised bool, now time.Time) {
	c.stateBefore = s.fsm.State()
	c.refusal = s.refuse(c, advertised, now)
	if c.refusal != nil {
		return
	}
	s.loops.admit(c.loopKey)
	for _, b := range s.budgets {
		if b.applies(c.tc.Name, c.kind, c.target) {
			b.take()
		}
	}
	if c.infraWrite() {
		s.fsm.BeginWrite(c.tc.Name)
	}
}

// refuse applies the checks in order: registered, advertised, arguments,
// look-first, FSM gate, budget, loop detection.
func (s *Session) refuse(c *call, advertised bool, now time.Time) *ToolError {
	name := c.tc.Name
	if c.entry == nil {
		return NewToolError(CodeUnknownTool, "no tool named %q exists", name).With("tool", name)
	}
	if !advertised || !s.profile.Advertises(name) {
		return NewToolError(CodeToolNotAdvertised, "tool %q is not available in this turn", name).With("tool", name)
	}
	if err := c.entry.schema.validateArgs(c.tc.Arguments); err != nil {
		return NewToolError(CodeInvalidInput, "%v", err).With("tool", name)
	}
	if c.kind == KindUserInput && !s.realTried && s.lookFirst < LookFirstMaxRefusals {
		s.lookFirst++
		s.metrics.lookFirstRefusal()
		return NewToolError(CodeLookFirst, "try the available read tools before asking the operator").
			With("refusals_left", LookFirstMaxRefusals-s.lookFirst)
	}
	if c.kind == KindWrite {
		if err := s.fsm.CanExecute(c.kind, name); err != nil {
			blocked := err.(*FSMBlockedError)
			s.fsm.RecordBlock(blocked, now)
			s.metrics.fsmBlock(blocked.State, blocked.Kind)
			return &ToolError{Code: CodeFSMBlocked, Message: blocked.Reason, Details: blocked.details(), Err: blocked}
		}
	}
	for _, b := range s.budgets {
		if b.applies(name, c.kind, c.target) && b.exhausted() {
			return NewToolError(CodeBudgetExhausted, "the %s budget of %d calls is spent", b.Name, b.Limit).
				With("budget", b.Name)
		}
	}
	c.loopKey = loopKey(name, c.tc.Arguments)
	if s.loops.repeated(c.loopKey) {
		s.metrics.loopDetected()
		return NewToolError(CodeLoopDetected, "%s was already called %d times with these arguments since the last write; use what you have", name, LoopThreshold).
			With("tool", name)
	}
	return nil
}

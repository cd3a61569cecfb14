package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
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

// Check names one pre-check. Prechecks lists them in the order they run.
type Check string

// Pre-checks, in order.
const (
	CheckRegistered       Check = "registered"
	CheckAdvertised       Check = "advertised"
	CheckWellFormed       Check = "well_formed"
	CheckPlaceholders     Check = "placeholders"
	CheckArguments        Check = "arguments"
	CheckLookFirst        Check = "look_first"
	CheckStateMachine     Check = "state_machine"
	CheckTargetResolved   Check = "target_resolved"
	CheckTargetKind       Check = "target_kind"
	CheckSignal           Check = "signal"
	CheckAutonomyRisk     Check = "autonomy_risk"
	CheckApproval         Check = "approval"
	CheckConditionPresent Check = "condition_present"
	CheckBudget           Check = "budget"
	CheckOncePerEpisode   Check = "once_per_episode"
	CheckLoop             Check = "loop"
)

// checkScope selects the calls a check applies to.
type checkScope string

const (
	scopeAll   checkScope = "all"
	scopeWrite checkScope = "writes"                // any write, patrold's own state included
	scopeInfra checkScope = "infrastructure_writes" // writes that change infrastructure
)

func (sc checkScope) applies(c *call) bool {
	switch sc {
	case scopeWrite:
		return c.kind == KindWrite
	case scopeInfra:
		return c.infraWrite()
	}
	return true
}

// precheckFn judges one call; nil admits it as far as this check goes.
type precheckFn func(ctx context.Context, s *Session, c *call, in *judgeInput) *ToolError

// precheck is one entry of the ordered pre-check.
type precheck struct {
	check Check
	code  Code // the code every refusal of this check carries
	// scope: which calls the check applies to.
	scope       checkScope
	description string
	fn          precheckFn
}

// prechecks is the whole authority of the registry: every call passes
// these, in this order, before any handler runs. The first refusal wins;
// a refusal's code is the check's own, whatever an Authority hook returned,
// so no hook can impersonate another check. The capability manifest lists
// exactly this table.
//
//mutate:precheck:rows ./agent,./cmd/patrold TestPrecheck|TestRefusals|TestLookBeforeAsking|TestBudgets|TestLoopCounter|TestFailedWrite|TestBatchSecond|TestOnlyVerifying|TestArgumentsBounded|TestApproval|TestAssistantAttacks
var prechecks = []precheck{
	{CheckRegistered, CodeUnknownTool, scopeAll, "the tool is registered", checkRegistered},
	{CheckAdvertised, CodeToolNotAdvertised, scopeAll, "the tool is advertised in this profile and this turn", checkAdvertised},
	{CheckWellFormed, CodeMalformedToolCall, scopeAll, "the arguments are one complete JSON object (not cut off or malformed)", checkWellFormed},
	{CheckPlaceholders, CodeNoSuchPlaceholder, scopeAll, "the arguments name only placeholders the session sent (when names are masked)", checkPlaceholders},
	{CheckArguments, CodeInvalidInput, scopeAll, "the arguments match the schema and are bounded (strings 2 KiB unless declared, arrays 64 items)", checkArguments},
	{CheckLookFirst, CodeLookFirst, scopeAll, "an operator question comes after a real tool was tried", checkLookFirst},
	{CheckStateMachine, CodeFSMBlocked, scopeWrite, "the session state machine admits a write now", checkStateMachine},
	{CheckTargetResolved, CodeTargetUnresolved, scopeInfra, "the write's target was resolved live in this session", checkTargetResolved},
	{CheckTargetKind, CodePolicyBlocked, scopeInfra, "the target's resource kind is one the action declares (kinds)", checkTargetKind},
	{CheckSignal, CodePolicyBlocked, scopeInfra, "the finding's signal is one the action declares (signals)", checkSignal},
	{CheckAutonomyRisk, CodePolicyBlocked, scopeInfra, "the autonomy level and the action's risk allow it to run", checkAutonomyRisk},
	{CheckApproval, CodeApprovalRequired, scopeInfra, "an operator approved it when the policy requires approval", checkApproval},
	{CheckConditionPresent, CodePolicyBlocked, scopeInfra, "a live check shows the condition still present", checkConditionPresent},
	{CheckBudget, CodeBudgetExhausted, scopeAll, "the session's call budgets have room", checkBudget},
	{CheckOncePerEpisode, CodePolicyBlocked, scopeInfra, "the same write has not already executed in this session", checkOncePerEpisode},
	{CheckLoop, CodeLoopDetected, scopeAll, "the same call was not repeated too often since the last write", checkLoop},
}

// PrecheckInfo describes one pre-check in the capability manifest.
type PrecheckInfo struct {
	Check       Check  `json:"check"`
	Code        Code   `json:"code"`
	AppliesTo   string `json:"applies_to"`
	Description string `json:"description"`
}

// Prechecks returns the pre-checks in the order they run.
func Prechecks() []PrecheckInfo {
	out := make([]PrecheckInfo, len(prechecks))
	for i, p := range prechecks {
		out[i] = PrecheckInfo{Check: p.check, Code: p.code, AppliesTo: string(p.scope), Description: p.description}
	}
	return out
}

// Authority holds the checks of an infrastructure write that need the
// caller's knowledge of the world (the resolved target, the declared
// action, the policy, the live condition). The runtime calls them in the
// order of Prechecks. A hook returns nil to admit, or an error explaining
// the refusal (a *ToolError keeps its message and details; its code is
// replaced by the check's). Registration refuses an infrastructure write
// tool without one.
type Authority interface {
	// TargetResolved: the write's target was resolved live in this session.
	TargetResolved(args json.RawMessage) error
	// TargetKind: the target's resource kind is one the write declares.
	TargetKind(args json.RawMessage) error
	// Signal: the finding's signal is one the write declares.
	Signal(args json.RawMessage) error
	// AutonomyRisk: the autonomy level and risk allow the write at all.
	AutonomyRisk(args json.RawMessage) error
	// Approval: nil when no approval is needed or one was granted;
	// otherwise the hook records the request and explains.
	Approval(args json.RawMessage) error
	// ConditionPresent re-checks, live, that what the write fixes is there.
	ConditionPresent(ctx context.Context, args json.RawMessage) error
	// EpisodeKey names the write for once-per-episode ("" = the tool name).
	EpisodeKey(args json.RawMessage) string
}

// judgeInput is what a check may read besides the call.
type judgeInput struct {
	advertised func(string) bool
	now        time.Time
}

// precheck judges every call of a batch, sequentially in provider order,
// before any runs. An operator question is judged first: when it is
// admitted it runs alone and every sibling is SKIPPED.
func (s *Session) precheck(ctx context.Context, calls []*call, in *judgeInput) {
	for _, c := range calls {
		c.entry = s.reg.tools[c.tc.Name]
		c.kind, c.target = s.reg.Classify(c.tc.Name, c.tc.Arguments)
	}
	if q := firstQuestion(calls); q != nil {
		s.judge(ctx, q, in)
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
			s.judge(ctx, c, in)
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
func (s *Session) judge(ctx context.Context, c *call, in *judgeInput) {
	c.stateBefore = s.fsm.State()
	c.refusal = s.refuse(ctx, c, in)
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

// refuse applies the pre-checks in order; the first refusal wins.
func (s *Session) refuse(ctx context.Context, c *call, in *judgeInput) *ToolError {
	c.loopKey = loopKey(c.tc.Name, c.tc.Arguments)
	for _, p := range prechecks {
		if !p.scope.applies(c) {
			continue
		}
		if te := p.fn(ctx, s, c, in); te != nil {
			te.Code = p.code
			return te.With("check", string(p.check))
		}
	}
	return nil
}

func checkRegistered(_ context.Context, _ *Session, c *call, _ *judgeInput) *ToolError {
	if c.entry == nil {
		return NewToolError(CodeUnknownTool, "no tool named %q exists", c.tc.Name).With("tool", c.tc.Name)
	}
	return nil
}

func checkAdvertised(_ context.Context, s *Session, c *call, in *judgeInput) *ToolError {
	if !s.profile.Advertises(c.tc.Name) || (in.advertised != nil && !in.advertised(c.tc.Name)) {
		return NewToolError(CodeToolNotAdvertised, "tool %q is not available in this turn", c.tc.Name).With("tool", c.tc.Name)
	}
	return nil
}

// MaxMalformedEcho bounds how much of malformed arguments a refusal
// quotes back.
const MaxMalformedEcho = 120

func checkWellFormed(_ context.Context, _ *Session, c *call, _ *judgeInput) *ToolError {
	trimmed := bytes.TrimSpace(c.tc.Arguments)
	if len(trimmed) == 0 || string(trimmed) == "null" || (trimmed[0] == '{' && json.Valid(trimmed)) {
		return nil
	}
	got := string(trimmed)
	var s string
	if json.Unmarshal(trimmed, &s) == nil {
		got = s // the providers carry what was not JSON as a string
	}
	if r := []rune(got); len(r) > MaxMalformedEcho {
		got = string(r[:MaxMalformedEcho]) + "..."
	}
	return NewToolError(CodeMalformedToolCall, "arguments: not one complete JSON object (cut off or malformed); send the call again with its arguments as a JSON object").
		With("tool", c.tc.Name).With("received", got)
}

// Placeholders tells placeholders a masked session sent (model.mask_names)
// from ones a model made up.
type Placeholders interface {
	// Invented returns the placeholder-shaped words of s that were never
	// sent.
	Invented(s string) []string
}

// checkPlaceholders refuses arguments that name a made-up placeholder.
// The refusal names the arguments, never the placeholder: echoed back, a
// made-up placeholder would be masked as data.
func checkPlaceholders(_ context.Context, s *Session, c *call, _ *judgeInput) *ToolError {
	if s.opts.Placeholders == nil {
		return nil
	}
	var v any
	if decodeJSON(bytes.TrimSpace(c.tc.Arguments), &v) != nil {
		return nil // empty: nothing to name
	}
	var paths []string
	walkStrings(v, "arguments", func(path, str string) {
		if len(s.opts.Placeholders.Invented(str)) > 0 && !slices.Contains(paths, path) {
			paths = append(paths, path)
		}
	})
	if len(paths) == 0 {
		return nil
	}
	return NewToolError(CodeNoSuchPlaceholder, "%s: names a placeholder that appears nowhere in this session's data; use only the placeholders the data shows",
		strings.Join(paths, ", ")).With("tool", c.tc.Name).With("arguments", paths)
}

// walkStrings calls fn with every string of v (keys too) and its path,
// object keys in sorted order.
func walkStrings(v any, path string, fn func(path, s string)) {
	switch x := v.(type) {
	case string:
		fn(path, x)
	case []any:
		for i, e := range x {
			walkStrings(e, fmt.Sprintf("%s[%d]", path, i), fn)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fn(path, k)
			walkStrings(x[k], join(path, k), fn)
		}
	}
}

func checkArguments(_ context.Context, _ *Session, c *call, _ *judgeInput) *ToolError {
	if err := c.entry.schema.validateArgs(c.tc.Arguments); err != nil {
		return NewToolError(CodeInvalidInput, "%v", err).With("tool", c.tc.Name)
	}
	return nil
}

func checkLookFirst(_ context.Context, s *Session, c *call, _ *judgeInput) *ToolError {
	if c.kind == KindUserInput && !s.realTried && s.lookFirst < LookFirstMaxRefusals {
		s.lookFirst++
		s.metrics.lookFirstRefusal()
		return NewToolError(CodeLookFirst, "try the available read tools before asking the operator").
			With("refusals_left", LookFirstMaxRefusals-s.lookFirst)
	}
	return nil
}

func checkStateMachine(_ context.Context, s *Session, c *call, in *judgeInput) *ToolError {
	err := s.fsm.CanExecute(c.kind, c.tc.Name)
	if err == nil {
		return nil
	}
	blocked := err.(*FSMBlockedError)
	s.fsm.RecordBlock(blocked, in.now)
	s.metrics.fsmBlock(blocked.State, blocked.Kind)
	return &ToolError{Code: CodeFSMBlocked, Message: blocked.Reason, Details: blocked.details(), Err: blocked}
}

// hook runs one Authority hook; tools without an Authority (patrold's own
// state) never reach the write-only checks.
func hook(c *call, fn func(Authority) error) *ToolError {
	a := c.entry.tool.Authority
	if a == nil {
		return NewToolError(CodePolicyBlocked, "tool %s declares no authority for infrastructure writes", c.tc.Name)
	}
	err := fn(a)
	if err == nil {
		return nil
	}
	var te *ToolError
	if errors.As(err, &te) {
		return &ToolError{Message: te.Message, Details: cloneDetails(te.Details)}
	}
	return &ToolError{Message: err.Error()}
}

func cloneDetails(d map[string]any) map[string]any {
	if d == nil {
		return nil
	}
	out := make(map[string]any, len(d))
	for k, v := range d {
		out[k] = v
	}
	return out
}

func checkTargetResolved(_ context.Context, _ *Session, c *call, _ *judgeInput) *ToolError {
	return hook(c, func(a Authority) error { return a.TargetResolved(c.tc.Arguments) })
}

func checkTargetKind(_ context.Context, _ *Session, c *call, _ *judgeInput) *ToolError {
	return hook(c, func(a Authority) error { return a.TargetKind(c.tc.Arguments) })
}

func checkSignal(_ context.Context, _ *Session, c *call, _ *judgeInput) *ToolError {
	return hook(c, func(a Authority) error { return a.Signal(c.tc.Arguments) })
}

func checkAutonomyRisk(_ context.Context, _ *Session, c *call, _ *judgeInput) *ToolError {
	return hook(c, func(a Authority) error { return a.AutonomyRisk(c.tc.Arguments) })
}

func checkApproval(_ context.Context, _ *Session, c *call, _ *judgeInput) *ToolError {
	return hook(c, func(a Authority) error { return a.Approval(c.tc.Arguments) })
}

func checkConditionPresent(ctx context.Context, _ *Session, c *call, _ *judgeInput) *ToolError {
	return hook(c, func(a Authority) error { return a.ConditionPresent(ctx, c.tc.Arguments) })
}

// checkBudget refuses a call its budgets have no room for. An
// infrastructure write also needs room for the read that must verify it
// (when the budget counts reads), so a budget never admits a write it
// would then leave unverified.
func checkBudget(_ context.Context, s *Session, c *call, _ *judgeInput) *ToolError {
	for _, b := range s.budgets {
		if !b.applies(c.tc.Name, c.kind, c.target) {
			continue
		}
		need := 1
		if c.infraWrite() && b.applies("", KindRead, "") {
			need = 2
		}
		if b.Remaining() < need {
			return NewToolError(CodeBudgetExhausted, "the %s budget of %d calls has %d left; this call needs %d", b.Name, b.Limit, b.Remaining(), need).
				With("budget", b.Name)
		}
	}
	return nil
}

// episodeKey names an infrastructure write for once-per-episode.
func episodeKey(c *call) string {
	if a := c.entry.tool.Authority; a != nil {
		if k := a.EpisodeKey(c.tc.Arguments); k != "" {
			return c.tc.Name + ":" + k
		}
	}
	return c.tc.Name
}

func checkOncePerEpisode(_ context.Context, s *Session, c *call, _ *judgeInput) *ToolError {
	if key := episodeKey(c); s.fsm.Executed(key) {
		return NewToolError(CodePolicyBlocked, "%s already executed in this session; it runs at most once per session", key).
			With("write", key)
	}
	return nil
}

func checkLoop(_ context.Context, s *Session, c *call, _ *judgeInput) *ToolError {
	if s.loops.repeated(c.loopKey) {
		s.metrics.loopDetected()
		return NewToolError(CodeLoopDetected, "%s was already called %d times with these arguments since the last write; use what you have", c.tc.Name, LoopThreshold).
			With("tool", c.tc.Name)
	}
	return nil
}

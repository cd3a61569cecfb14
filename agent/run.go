package agent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/patrold/patrold/model"
)

// StopReason says why Run ended.
type StopReason string

// Stop reasons.
const (
	StopFinalAnswer      StopReason = "final_answer"
	StopTurnLimit        StopReason = "turn_limit"
	StopBudgetExhausted  StopReason = "budget_exhausted"
	StopApprovalRequired StopReason = "approval_required"
	StopError            StopReason = "error"
)

// Result is the outcome of Run.
type Result struct {
	StopReason  StopReason `json:"stop_reason"`
	FinalAnswer string     `json:"final_answer"`
	// FinalAnswerBlocked counts final answers refused for an unverified write.
	FinalAnswerBlocked int `json:"final_answer_blocked"`
	// Wrote: the session wrote (or tried to) at all.
	Wrote bool `json:"wrote"`
	// Verified: it wrote and a read or resolve succeeded after its last write.
	Verified bool `json:"verified"`
	// Unverified: it wrote and ended without reading the last write back.
	// Such a session never claims the fix (fix_verification_unknown).
	Unverified bool            `json:"unverified"`
	FinalState State           `json:"final_state"`
	Turns      int             `json:"turns"`
	Steps      []Step          `json:"steps"`
	Usage      model.Usage     `json:"usage"`
	Messages   []model.Message `json:"messages"`
	// BudgetError is the TurnBudget refusal when StopReason is budget_exhausted.
	BudgetError string `json:"budget_error,omitempty"`
}

// Run drives the model from the given conversation until it gives a final
// answer the FSM accepts, the turn limit or budget is reached, or a write
// waits for approval. It returns an error only when the provider fails; the
// Result then describes the session up to that point.
func (s *Session) Run(ctx context.Context, messages []model.Message) (*Result, error) {
	if s.opts.Provider == nil {
		return nil, fmt.Errorf("agent run: provider: required")
	}
	res := &Result{Messages: append([]model.Message(nil), messages...)}
	defs := s.reg.ToolDefs(s.profile)
	readDefs := s.reg.ToolDefs(s.readProfile())
	restricted := false
	for turn := 1; res.StopReason == "" && turn <= s.opts.MaxTurns; turn++ {
		if s.opts.TurnBudget != nil {
			if err := s.opts.TurnBudget(turn-1, res.Usage); err != nil {
				res.StopReason, res.BudgetError = StopBudgetExhausted, fmt.Sprintf("%s: %v", CodeBudgetExhausted, err)
				break
			}
		}
		req := model.Request{System: s.opts.System, Messages: res.Messages, MaxTokens: s.opts.MaxTokens, Tools: defs}
		if restricted {
			req.Tools = readDefs
		}
		resp, err := s.opts.Provider.Chat(ctx, req)
		if err != nil {
			res.StopReason = StopError
			s.finish(res)
			return res, fmt.Errorf("agent run: turn %d: %w", turn, err)
		}
		res.Turns = turn
		res.Usage = res.Usage.Add(resp.Usage)
		// Calls written into the text leave it; with no proper call they
		// are made, through the same pre-checks.
		if leaked, text := LeakedToolCalls(turn, resp.Text, s.profile.Advertises); len(leaked) > 0 {
			r := *resp
			r.Text = text
			if len(r.ToolCalls) == 0 {
				r.ToolCalls = leaked
			}
			resp = &r
		}
		res.Messages = append(res.Messages, storedReply(turn, resp))
		if len(resp.ToolCalls) == 0 {
			s.finalAnswer(res, resp.Text)
			restricted = false
			continue
		}
		var narrow func(string) bool
		if restricted {
			narrow = s.readOnly
		}
		batch := s.executeBatch(ctx, turn, resp.ToolCalls, narrow)
		for _, r := range batch.Results {
			res.Messages = append(res.Messages, model.Message{Role: model.RoleTool, Content: r.Content, ToolCallID: r.Step.CallID, ToolName: r.Step.Tool})
		}
		if batch.ApprovalRequired {
			res.StopReason = StopApprovalRequired
		}
		// A turn after a refused turn offers the read tools only (so the
		// verifying read a refusal asks for stays possible); calls to other
		// tools during it are refused as not advertised, and they do not
		// extend the restriction.
		restricted = !restricted && (batch.LoopDetected || batch.AllBlocked)
	}
	if res.StopReason == "" {
		res.StopReason = StopTurnLimit
	}
	s.finish(res)
	return res, nil
}

// Bounds on what a session keeps of a model reply (its conversation is
// stored, persisted with approvals and sent back). The text is cut at
// MaxToolResultChars characters. An argument object larger than
// MaxStoredArgumentBytes is replaced by a note of its size. The calls
// themselves are judged on what the model sent (and an oversized argument
// fails the schema bounds anyway).
const MaxStoredArgumentBytes = 16384

func storedReply(turn int, resp *model.Response) model.Message {
	m := model.Message{Role: model.RoleAssistant, Content: resp.Text}
	if r := []rune(m.Content); len(r) > MaxToolResultChars {
		m.Content = string(r[:MaxToolResultChars]) + " [cut]"
	}
	for i, tc := range resp.ToolCalls {
		tc.Name = SafeToolName(tc.Name)
		if tc.ID == "" || len(tc.ID) > maxCallIDBytes {
			tc.ID = fmt.Sprintf("call_%d_%d", turn, i+1)
		}
		if len(tc.Arguments) > MaxStoredArgumentBytes {
			note, _ := json.Marshal(map[string]int{"argument_bytes_not_kept": len(tc.Arguments)})
			tc.Arguments = note
		}
		m.ToolCalls = append(m.ToolCalls, tc)
	}
	return m
}

// readProfile is the profile narrowed to the tools that can only resolve
// or read: what a restricted turn offers.
func (s *Session) readProfile() Profile {
	p := Profile{Name: s.profile.Name}
	for _, name := range s.profile.Tools {
		if s.readOnly(name) {
			p.Tools = append(p.Tools, name)
		}
	}
	return p
}

// readOnly reports whether every call of the named tool is a resolve or read.
func (s *Session) readOnly(name string) bool {
	e, ok := s.reg.tools[name]
	if !ok {
		return false
	}
	t := e.tool
	if t.Discriminator == "" {
		return t.Kind == KindResolve || t.Kind == KindRead
	}
	return false
}

// finalAnswer accepts a turn without tool calls as the final answer, unless
// the FSM refuses: then a verification prompt is injected and the loop goes on.
func (s *Session) finalAnswer(res *Result, text string) {
	if err := s.fsm.CanFinalAnswer(); err != nil {
		res.FinalAnswerBlocked++
		s.metrics.finalAnswerBlock()
		s.log.Info("final answer refused", "state", string(s.fsm.State()))
		res.Messages = append(res.Messages, model.Message{Role: model.RoleUser, Content: s.opts.VerificationPrompt})
		return
	}
	s.fsm.CompleteVerification()
	res.FinalAnswer = text
	res.StopReason = StopFinalAnswer
}

// finish fills the verification verdict from the FSM. A write that was not
// read back is never reported as verified.
func (s *Session) finish(res *Result) {
	state := s.fsm.State()
	res.FinalState = state
	res.Wrote = s.fsm.WroteThisEpisode()
	pending := state == StateWriting || (state == StateVerifying && !s.fsm.ReadAfterWrite())
	res.Unverified = res.Wrote && pending
	res.Verified = res.Wrote && !pending
	res.Steps = s.Steps()
}

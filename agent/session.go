package agent

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/patrold/patrold/model"
)

// DefaultMaxTurns is the assistant's turn limit (docs/ASSISTANT.md).
const DefaultMaxTurns = 20

// DefaultVerificationPrompt is injected as a user message when the model
// tries to finish with an unverified write.
const DefaultVerificationPrompt = "You changed something and have not read it back yet. " +
	"Before answering, use a read tool to check the current state of what you changed."

// Options configure a Session.
type Options struct {
	// Provider is the model; required by Run, unused by ExecuteBatch.
	Provider model.Provider
	// Registry and Profile are required: the tools that exist and the ones
	// this session advertises.
	Registry *Registry
	Profile  Profile
	// System is the policy text, sent as the request's system prompt.
	System string
	// MaxTurns bounds the model calls; 0 means DefaultMaxTurns.
	MaxTurns  int
	MaxTokens int
	// FSM resumes a persisted session; nil starts in RESOLVING.
	FSM *FSM
	// Budgets are per-session call counters (evidence, reports).
	Budgets []*CallBudget
	// TurnBudget is checked before the first turn and after every turn; a
	// non-nil error stops the loop with BUDGET_EXHAUSTED.
	TurnBudget func(turn int, usage model.Usage) error
	// Placeholders, when names are masked (model.mask_names), tells the
	// placeholders the session sent from ones a model made up; the
	// placeholders pre-check refuses a call whose arguments hold one.
	// nil: names are not masked and the check admits every call.
	Placeholders Placeholders
	// VerificationPrompt overrides DefaultVerificationPrompt.
	VerificationPrompt string
	Metrics            *Metrics
	Logger             *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Validate checks the options, naming the field.
func (o Options) Validate() error {
	if o.Registry == nil {
		return fmt.Errorf("registry: required")
	}
	if err := o.Profile.Validate(o.Registry); err != nil {
		return err
	}
	if o.MaxTurns < 0 {
		return fmt.Errorf("max_turns: must not be negative, got %d", o.MaxTurns)
	}
	if o.MaxTokens < 0 {
		return fmt.Errorf("max_tokens: must not be negative, got %d", o.MaxTokens)
	}
	for i, b := range o.Budgets {
		if b == nil {
			return fmt.Errorf("budgets[%d]: nil", i)
		}
		if err := b.Validate(); err != nil {
			return fmt.Errorf("budgets[%d].%w", i, err)
		}
	}
	return nil
}

// Session is one agent session: a state machine, a loop detector, the
// look-before-asking bound and the budgets, driven by a model (Run) or by
// a playbook (ExecuteBatch). A Session is used by one goroutine at a time.
type Session struct {
	opts      Options
	reg       *Registry
	profile   Profile
	fsm       *FSM
	loops     *loopDetector
	budgets   []*CallBudget
	metrics   *Metrics
	log       *slog.Logger
	now       func() time.Time
	realTried bool // a tool other than an operator question has run
	lookFirst int  // LOOK_FIRST refusals so far
	steps     []Step
}

// NewSession validates opts and returns a session.
func NewSession(opts Options) (*Session, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("agent session: %w", err)
	}
	s := &Session{
		opts: opts, reg: opts.Registry, profile: opts.Profile, fsm: opts.FSM,
		loops: newLoopDetector(), budgets: opts.Budgets, metrics: opts.Metrics,
		log: opts.Logger, now: opts.Now,
	}
	if s.fsm == nil {
		s.fsm = NewFSM()
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.log = s.log.With("component", "agent", "profile", opts.Profile.Name)
	if s.now == nil {
		s.now = time.Now
	}
	if s.opts.MaxTurns == 0 {
		s.opts.MaxTurns = DefaultMaxTurns
	}
	if s.opts.VerificationPrompt == "" {
		s.opts.VerificationPrompt = DefaultVerificationPrompt
	}
	return s, nil
}

// FSM returns the session's state machine (to persist it).
func (s *Session) FSM() *FSM { return s.fsm }

// Steps returns the step records so far.
func (s *Session) Steps() []Step { return append([]Step(nil), s.steps...) }

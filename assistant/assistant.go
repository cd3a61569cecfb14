package assistant

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"time"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model/prompt"
)

// Assistant runs remediation sessions and decides approvals. It
// implements api.Approvals. Safe for concurrent use.
type Assistant struct {
	opts    Options
	actions []Action
	exec    executor
	neut    *prompt.Neutraliser
	metrics *metrics
	log     *slog.Logger
}

// New validates opts and builds an Assistant. Every action's program must
// exist (resolved through PATH when it has no slash).
func New(opts Options) (*Assistant, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("assistant: %w", err)
	}
	opts = opts.withDefaults()
	actions, _ := ParseActions(opts.Actions)
	for i, a := range actions {
		if _, err := exec.LookPath(a.Command[0]); err != nil {
			return nil, fmt.Errorf("assistant: actions[%d].command[0]: %w", i, err)
		}
	}
	neut := opts.Neutraliser
	if neut == nil {
		var err error
		if neut, err = prompt.NewNeutraliser(nil); err != nil {
			return nil, fmt.Errorf("assistant: %w", err)
		}
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("assistant: registerer: %w", err)
	}
	return &Assistant{
		opts: opts, actions: actions, neut: neut, metrics: m,
		exec: executor{timeout: opts.ActionTimeout, maxOutput: opts.MaxOutputBytes},
		log:  opts.Logger.With("component", "assistant"),
	}, nil
}

// Actions returns the declared actions.
func (a *Assistant) Actions() []Action { return append([]Action(nil), a.actions...) }

// Driver returns the driver new sessions use: the model when a provider is
// configured, else the playbook.
func (a *Assistant) Driver() contracts.Driver {
	if a.opts.Provider != nil {
		return contracts.DriverModel
	}
	return contracts.DriverPlaybook
}

func (a *Assistant) action(name string) (Action, bool) {
	for _, act := range a.actions {
		if act.Name == name {
			return act, true
		}
	}
	return Action{}, false
}

// Request asks for one session.
type Request struct {
	FindingID string
	// Attempt is the investigation attempt (from the remediation request);
	// 0 takes the finding's current attempt count (at least 1).
	Attempt int
	// Autonomy of the request; the stricter of it and the current
	// patrol.autonomy applies. Empty takes the current one.
	Autonomy findings.Autonomy
	// Epoch is the request's epoch, carried back on the outcome.
	Epoch uint64
}

// Run runs one session for the finding now and returns how it ended. The
// outcome is stored with the transcript, published and recorded (when a
// Publisher or Recorder is configured). Only a missing finding or a store
// failure is an error; a session that fails to remediate is an outcome.
func (a *Assistant) Run(ctx context.Context, req Request) (*Result, error) {
	f, err := a.opts.Store.Get(ctx, req.FindingID)
	if err != nil {
		return nil, fmt.Errorf("assistant: finding %s: %w", req.FindingID, err)
	}
	now := a.opts.Now()
	attempt := req.Attempt
	if attempt < 1 {
		attempt = max(f.Attempt, 1)
	}
	autonomy := Effective(req.Autonomy, a.opts.Autonomy())
	s, err := a.newSession(sessionState{
		ID: findings.NewID(now), FindingID: f.ID, Attempt: attempt, Driver: a.Driver(),
		Autonomy: autonomy, StartedAt: now, Epoch: req.Epoch,
	}, f, nil)
	if err != nil {
		return nil, err
	}
	if err := a.startSession(ctx, s); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, a.opts.SessionTimeout)
	defer cancel()
	if s.state.Driver == contracts.DriverModel {
		s.driveModel(sctx, s.initialMessages())
	} else {
		s.drivePlaybook(sctx)
	}
	return a.finish(ctx, s, sctx.Err())
}

// nowUTC is the assistant clock in UTC.
func (a *Assistant) nowUTC() time.Time { return a.opts.Now().UTC() }

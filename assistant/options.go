// Package assistant runs gated remediation sessions for findings that
// passed the investigation gate. It holds:
//   - the remediation tool profile (read tools that re-collect live state,
//     the declared actions as one write tool);
//   - the action executor and its risk policy;
//   - operator approvals that park a session and resume it from its
//     persisted state machine;
//   - the playbook driver used when no model is configured;
//   - the session transcript;
//   - the NATS worker that consumes remediation requests and publishes
//     outcomes.
//
// Every call goes through the agent registry and state machine: a session
// cannot write without a validated target, cannot write twice without
// reading in between, and reports fix_verified only when check_condition,
// read after the write, says the condition cleared.
package assistant

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/store/records"
)

// Defaults.
const (
	// DefaultMaxTurns bounds the model turns of one session (assistant.max_turns).
	DefaultMaxTurns = agent.DefaultMaxTurns
	// DefaultApprovalTTL is how long an approval waits (assistant.approval_ttl).
	DefaultApprovalTTL = 5 * time.Minute
	// DefaultActionTimeout bounds one action process; its process group is
	// killed when it expires.
	DefaultActionTimeout = 2 * time.Minute
	// DefaultMaxOutputBytes bounds the combined output kept from an action.
	DefaultMaxOutputBytes = 16 << 10
	// DefaultSessionTimeout bounds one session (investigation.timeout).
	DefaultSessionTimeout = findings.DefaultInvestigationTTL
	// DefaultEvidenceBudget is investigation.evidence_budget's default: the
	// resolve and read calls one session may make.
	DefaultEvidenceBudget = findings.DefaultEvidenceBudget
	// ProfileName names the remediation tool profile.
	ProfileName = "remediation"
)

// Store is what sessions need of the store: the finding, the sessions
// with their transcripts, exchanges and spend, and the approvals
// (migrations 00005, 00006).
type Store interface {
	Get(ctx context.Context, id string) (findings.Finding, error)
	ExchangeStore
	StartSession(ctx context.Context, id, findingID string, attempt int, driver string, startedAt time.Time) error
	FinishSession(ctx context.Context, id string, end records.SessionEnd) error
	Session(ctx context.Context, id string) (records.SessionRecord, error)
	LastSession(ctx context.Context, findingID string, attempt int) (records.SessionRecord, error)
	SessionCost(ctx context.Context, id string) (float64, error)
	SessionSpent(ctx context.Context, since time.Time, except string) (float64, error)
	InsertApproval(ctx context.Context, ap records.ApprovalRecord) error
	Approval(ctx context.Context, id string) (records.ApprovalRecord, error)
	PendingApprovals(ctx context.Context, now time.Time, after []string, limit int) ([]records.ApprovalRecord, error)
	FindingApprovals(ctx context.Context, findingID string) ([]records.ApprovalRecord, error)
	DueApprovals(ctx context.Context, now time.Time) ([]records.ApprovalRecord, error)
	DecideApproval(ctx context.Context, id, state, actor string, now time.Time) (bool, error)
}

// Publisher sends one event (approval lifecycle, remediation outcome). The
// daemon backs it with the outbox or bus.Transport.Publish.
type Publisher interface {
	Publish(ctx context.Context, row contracts.OutboxEvent) error
}

// Recorder applies an outcome to its finding directly; the CLI uses it
// when no daemon consumes the outcomes subject.
type Recorder interface {
	RecordOutcome(ctx context.Context, o findings.Outcome, now time.Time) (bool, error)
}

// Operator answers ask_operator in interactive sessions.
type Operator interface {
	Ask(ctx context.Context, question string) (string, error)
}

// Options configure an Assistant.
type Options struct {
	Store Store // required
	// Source returns the snapshot source live state is re-collected from.
	Source func() snapshot.Source // required
	// Thresholds returns the current effective thresholds.
	Thresholds func() signals.Thresholds // required
	// Actions are the declared remediation actions (YAML `actions`).
	Actions []ActionSpec
	// Autonomy returns the current patrol.autonomy. A request's autonomy
	// can only make a session stricter, never more permissive.
	Autonomy func() findings.Autonomy // required
	// Provider drives sessions; nil selects the playbook driver.
	Provider model.Provider
	// ModelName prices the provider's usage (model.prices); MaxOutputTokens
	// bounds one answer (0: the provider's default).
	ModelName       string
	MaxOutputTokens int
	// MaskNames sends the fleet's names, ids, tags and addresses as
	// placeholders and maps them back in what the model answers
	// (model.mask_names).
	MaskNames bool
	// Prices and Budget are model.prices and model.budget: per_run_usd
	// bounds one session, per_day_usd and per_30d_usd the spend of runs and
	// sessions together.
	Prices model.Prices
	Budget model.BudgetOptions
	// Ledger reports the spend of finished runs alone; sessions add their
	// own. nil uses the Store when it is a RunLedger.
	Ledger model.SpendLedger
	// EvidenceBudget bounds the resolve and read calls of one session
	// (investigation.evidence_budget); 0 takes the default.
	EvidenceBudget int
	// Config is the assistant section (max_turns, approval_ttl).
	Config Settings
	// Publisher receives approval events and outcomes; nil publishes nothing.
	Publisher Publisher
	// Recorder, when set, records outcomes on the finding directly.
	Recorder Recorder
	// Operator, when set, makes sessions interactive (ask_operator).
	Operator Operator
	// ActionTimeout, MaxOutputBytes and SessionTimeout: 0 takes the default.
	ActionTimeout  time.Duration
	MaxOutputBytes int
	SessionTimeout time.Duration
	// StoreRetry is how long the end of a session (its approval, its
	// transcript and outcome) keeps being stored while the Store answers
	// ErrStoreUnavailable: a standalone worker waits out a failover instead
	// of losing what the session did. 0: not retried.
	StoreRetry time.Duration
	// AgentMetrics are shared agent runtime metrics (nil: none).
	AgentMetrics *agent.Metrics
	// Neutraliser scans untrusted resource text; nil builds an unregistered one.
	Neutraliser *prompt.Neutraliser
	Logger      *slog.Logger
	// Registerer receives the assistant metrics (nil: a private registry).
	Registerer prometheus.Registerer
	Now        func() time.Time
}

// Validate reports every problem, naming the field or YAML key.
func (o Options) Validate() error {
	var errs []error
	if o.Store == nil {
		errs = append(errs, errors.New("store: required"))
	}
	if o.Source == nil {
		errs = append(errs, errors.New("source: required"))
	}
	if o.Thresholds == nil {
		errs = append(errs, errors.New("thresholds: required"))
	}
	if o.Autonomy == nil {
		errs = append(errs, errors.New("autonomy: required"))
	}
	if o.Config.MaxTurns < 0 {
		errs = append(errs, fmt.Errorf("assistant.max_turns: must not be negative, got %d", o.Config.MaxTurns))
	}
	if o.Config.ApprovalTTL < 0 {
		errs = append(errs, fmt.Errorf("assistant.approval_ttl: must not be negative, got %s", o.Config.ApprovalTTL))
	}
	if o.ActionTimeout < 0 {
		errs = append(errs, fmt.Errorf("action_timeout: must not be negative, got %s", o.ActionTimeout))
	}
	if o.MaxOutputBytes < 0 {
		errs = append(errs, fmt.Errorf("max_output_bytes: must not be negative, got %d", o.MaxOutputBytes))
	}
	if o.EvidenceBudget < 0 {
		errs = append(errs, fmt.Errorf("investigation.evidence_budget: must not be negative, got %d", o.EvidenceBudget))
	}
	if o.Config.MaxTokens < 0 {
		errs = append(errs, fmt.Errorf("assistant.max_tokens: must not be negative, got %d", o.Config.MaxTokens))
	}
	if o.MaxOutputTokens < 0 {
		errs = append(errs, fmt.Errorf("max_output_tokens: must not be negative, got %d", o.MaxOutputTokens))
	}
	if o.SessionTimeout < 0 {
		errs = append(errs, fmt.Errorf("session_timeout: must not be negative, got %s", o.SessionTimeout))
	}
	if o.StoreRetry < 0 {
		errs = append(errs, fmt.Errorf("store_retry: must not be negative, got %s", o.StoreRetry))
	}
	if _, err := ParseActions(o.Actions); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	if o.Config.MaxTurns == 0 {
		o.Config.MaxTurns = DefaultMaxTurns
	}
	if o.Config.MaxTokens == 0 {
		o.Config.MaxTokens = DefaultMaxTokens
	}
	if o.EvidenceBudget == 0 {
		o.EvidenceBudget = DefaultEvidenceBudget
	}
	if o.Config.ApprovalTTL == 0 {
		o.Config.ApprovalTTL = DefaultApprovalTTL
	}
	if o.ActionTimeout == 0 {
		o.ActionTimeout = DefaultActionTimeout
	}
	if o.MaxOutputBytes == 0 {
		o.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

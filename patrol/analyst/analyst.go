// Package analyst is the model side of a patrol run: steps 2, 5-7, 9, 10
// and 12 of docs/PATROL_ARCHITECTURE.md#run-pipeline. It does the budget
// pre-flight, triage, the seed context, the agentic detection loop and
// matching. It runs the evaluation pass over unmatched signals and the
// assessment sweep of previously active findings. Everything it returns
// came from tool calls that passed the checks; nothing is parsed from
// prose.
package analyst

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/patrol"
)

// Defaults of Options.
const (
	DefaultContextWindow   = model.DefaultOpenAIContextWindow
	DefaultMaxOutputTokens = model.DefaultMaxOutputTokens
	// MinContextWindow is the smallest context window the stages accept:
	// below it the policy, the tools and a useful seed do not fit.
	MinContextWindow = model.MinContextTokens
)

// Options configure an Analyst.
type Options struct {
	// Provider is the model (with its retries and circuit breaker);
	// required.
	Provider model.Provider
	// Model is the configured model name, used for pricing.
	Model string
	// ContextWindow and MaxOutputTokens size the seed context and bound
	// the conversation; 0 means DefaultContextWindow/DefaultMaxOutputTokens.
	ContextWindow   int
	MaxOutputTokens int
	Prices          model.Prices
	Budget          model.BudgetOptions
	// Ledger reports past spend; required when Budget sets a day or
	// 30-day limit.
	Ledger model.SpendLedger
	// Neutraliser scans untrusted text; nil builds one registered on
	// Registerer.
	Neutraliser *prompt.Neutraliser
	// AgentMetrics are the shared agent runtime metrics; nil records none.
	AgentMetrics *agent.Metrics
	Registerer   prometheus.Registerer
	Logger       *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// ModelFindings bounds the model findings filed per run.
	ModelFindings ModelFindingLimits
	// MaskNames sends names, ids, tags and addresses as placeholders and
	// maps them back in what the model answers (model.mask_names).
	MaskNames bool
}

// Defaults of ModelFindingLimits.
const (
	DefaultMaxModelFindingsPerRun      = 25
	DefaultMaxModelFindingsPerResource = 3
)

// ModelFindingLimits bound the model findings one run files
// (patrol.model_findings): at most MaxPerRun in all and MaxPerResource on
// one resource; 0 means the default. Reports over them are refused
// model_findings_capped and counted.
type ModelFindingLimits struct {
	MaxPerRun      int
	MaxPerResource int
}

func (l ModelFindingLimits) limits() (perRun, perResource int) {
	perRun, perResource = l.MaxPerRun, l.MaxPerResource
	if perRun == 0 {
		perRun = DefaultMaxModelFindingsPerRun
	}
	if perResource == 0 {
		perResource = DefaultMaxModelFindingsPerResource
	}
	return perRun, perResource
}

// Validate checks the options, naming the field.
func (o Options) Validate() error {
	var errs []error
	if o.Provider == nil {
		errs = append(errs, errors.New("provider: required"))
	}
	if o.ContextWindow < 0 {
		errs = append(errs, fmt.Errorf("context_window: %d must not be negative", o.ContextWindow))
	} else if o.ContextWindow > 0 && o.ContextWindow < MinContextWindow {
		errs = append(errs, fmt.Errorf("context_window: %d is below the minimum %d", o.ContextWindow, MinContextWindow))
	}
	window := o.ContextWindow
	if window == 0 {
		window = DefaultContextWindow
	}
	if o.MaxOutputTokens < 0 {
		errs = append(errs, fmt.Errorf("max_output_tokens: %d must not be negative", o.MaxOutputTokens))
	} else if o.MaxOutputTokens >= window/2 {
		errs = append(errs, fmt.Errorf("max_output_tokens: %d must be below half the context window (%d)", o.MaxOutputTokens, window))
	}
	if o.ModelFindings.MaxPerRun < 0 {
		errs = append(errs, fmt.Errorf("patrol.model_findings.max_per_run: %d must not be negative", o.ModelFindings.MaxPerRun))
	}
	if o.ModelFindings.MaxPerResource < 0 {
		errs = append(errs, fmt.Errorf("patrol.model_findings.max_per_resource: %d must not be negative", o.ModelFindings.MaxPerResource))
	}
	if _, err := model.NewBudget(o.Budget, o.Prices, o.Ledger); err != nil {
		errs = append(errs, fmt.Errorf("budget: %w", err))
	}
	if o.Budget.Limited() {
		if _, ok := o.Prices.Lookup(o.Model); !ok || o.Model == "" {
			errs = append(errs, fmt.Errorf("prices: no price for model %q, but the budget sets a limit", o.Model))
		}
	}
	return errors.Join(errs...)
}

// Analyst runs the model stages of patrol runs. It is safe for concurrent
// use; each Analyze call has its own state, recording and budget.
type Analyst struct {
	opts     Options
	composer *prompt.Composer
	metrics  *metrics
	log      *slog.Logger
	now      func() time.Time
}

var _ patrol.Analyst = (*Analyst)(nil)

// New validates opts and builds an Analyst.
func New(opts Options) (*Analyst, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("analyst: %w", err)
	}
	if opts.ContextWindow == 0 {
		opts.ContextWindow = DefaultContextWindow
	}
	if opts.MaxOutputTokens == 0 {
		opts.MaxOutputTokens = DefaultMaxOutputTokens
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Neutraliser == nil {
		n, err := prompt.NewNeutraliser(opts.Registerer)
		if err != nil {
			return nil, fmt.Errorf("analyst: neutraliser: %w", err)
		}
		opts.Neutraliser = n
	}
	composer, err := prompt.New(prompt.Options{Policy: Policy, Neutraliser: opts.Neutraliser})
	if err != nil {
		return nil, fmt.Errorf("analyst: %w", err)
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("analyst: %w", err)
	}
	return &Analyst{opts: opts, composer: composer, metrics: m, log: opts.Logger.With("component", "analyst"), now: opts.Now}, nil
}

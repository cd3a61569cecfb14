package daemon

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/model/providers"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/patrol/analyst"
)

// ledgerFunc adapts a function to model.SpendLedger (the store is opened
// after the analyst is built).
type ledgerFunc func(since time.Time) (float64, error)

// Spent implements model.SpendLedger.
func (f ledgerFunc) Spent(since time.Time) (float64, error) { return f(since) }

// Shared are the model-side parts built once per process: their metrics
// can be registered only once, and the patrol and assistant sides share
// them.
type Shared struct {
	Provider     model.Provider // nil: no model
	Neutraliser  *prompt.Neutraliser
	AgentMetrics *agent.Metrics
	Registerer   prometheus.Registerer
}

// NewShared builds the shared parts from the model section; provider, when
// not nil, replaces the configured one (replaying a recorded exchange). The
// model section is read once: changing it takes a restart.
func NewShared(cfg *config.Config, provider model.Provider, reg prometheus.Registerer) (Shared, error) {
	s := Shared{Provider: provider, Registerer: reg}
	var err error
	if s.Provider == nil {
		if s.Provider, err = providers.New(cfg.Model, reg); err != nil {
			return s, err
		}
	}
	if s.Neutraliser, err = prompt.NewNeutraliser(reg); err != nil {
		return s, err
	}
	if s.AgentMetrics, err = agent.NewMetrics(reg); err != nil {
		return s, err
	}
	return s, nil
}

// NewAnalyst builds the model stages, or returns nil without a provider.
func NewAnalyst(cfg *config.Config, sh Shared, ledger model.SpendLedger, log *slog.Logger, now func() time.Time) (patrol.Analyst, error) {
	if sh.Provider == nil {
		return nil, nil
	}
	o := analyst.Options{Provider: sh.Provider, Prices: cfg.Model.Prices, Budget: cfg.Model.Budget, Ledger: ledger,
		Neutraliser: sh.Neutraliser, AgentMetrics: sh.AgentMetrics, Registerer: sh.Registerer, Logger: log, Now: now}
	if ep, ok := cfg.Model.Endpoint(); ok {
		o.Model, o.ContextWindow, o.MaxOutputTokens = ep.Model, ep.ContextWindow, ep.MaxOutputTokens
	}
	a, err := analyst.New(o)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	return a, nil
}

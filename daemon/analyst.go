package daemon

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/providers"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/patrol/analyst"
)

// ledgerFunc adapts a function to model.SpendLedger (the store is opened
// after the analyst is built).
type ledgerFunc func(since time.Time) (float64, error)

// Spent implements model.SpendLedger.
func (f ledgerFunc) Spent(since time.Time) (float64, error) { return f(since) }

// NewAnalyst builds the model stages from the model section, or returns nil
// for provider none. provider, when not nil, replaces the configured one
// (replaying a recorded exchange). The model section is read once: changing
// it takes a restart.
func NewAnalyst(cfg *config.Config, provider model.Provider, ledger model.SpendLedger, reg prometheus.Registerer, log *slog.Logger, now func() time.Time) (patrol.Analyst, error) {
	if cfg.Model.Provider == model.ProviderNone && provider == nil {
		return nil, nil
	}
	if provider == nil {
		p, err := providers.New(cfg.Model, reg)
		if err != nil {
			return nil, err
		}
		provider = p
	}
	o := analyst.Options{Provider: provider, Prices: cfg.Model.Prices, Budget: cfg.Model.Budget, Ledger: ledger,
		Registerer: reg, Logger: log, Now: now}
	if ep, ok := cfg.Model.Endpoint(); ok {
		o.Model, o.ContextWindow, o.MaxOutputTokens = ep.Model, ep.ContextWindow, ep.MaxOutputTokens
	}
	a, err := analyst.New(o)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	return a, nil
}

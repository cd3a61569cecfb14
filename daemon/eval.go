package daemon

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/providers"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/patrol/analyst"
	"github.com/patrold/patrold/store"
)

// EvalModel is what `patrold eval` runs: the configured model, built
// fresh for every scenario run, and the model stages around it exactly as
// a patrol run builds them.
type EvalModel struct {
	Provider, Model string
	// ContextTokens is the context window the stages are built with.
	ContextTokens int
	// New builds the configured model; nil when model.provider is none.
	New func() (model.Provider, error)
	// OpenStore opens a throwaway store.
	OpenStore func(ctx context.Context, path string) (*store.Store, error)
	// Analyst builds the model stages around p, metrics on reg.
	Analyst func(p model.Provider, reg prometheus.Registerer) (patrol.Analyst, error)
}

// EvalModel returns the configured model for an evaluation. The stages
// have no spend ledger: a throwaway store has no past spend.
func (r *Root) EvalModel() EvalModel {
	cfg := r.cfg
	em := EvalModel{Provider: cfg.Model.Provider, ContextTokens: analyst.DefaultContextWindow, OpenStore: store.Open}
	if ep, ok := cfg.Model.Endpoint(); ok {
		em.Model = ep.Model
	}
	if w := cfg.Model.Window(); w > 0 {
		em.ContextTokens = w
	}
	if cfg.Model.Provider != model.ProviderNone && cfg.Model.Provider != "" {
		em.New = func() (model.Provider, error) {
			p, err := providers.New(cfg.Model, nil)
			return p, configErr(err)
		}
	}
	none := ledgerFunc(func(time.Time) (float64, error) { return 0, nil })
	em.Analyst = func(p model.Provider, reg prometheus.Registerer) (patrol.Analyst, error) {
		sh, err := newShared(cfg, p, reg)
		if err != nil {
			return nil, configErr(err)
		}
		a, err := newAnalyst(cfg, sh, none, nil, r.o.Now)
		return a, configErr(err)
	}
	return em
}

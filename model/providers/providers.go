// Package providers builds the configured model.Provider: the SDK client
// or scripted provider named by model.provider, instrumented and wrapped in
// a circuit breaker.
package providers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/anthropic"
	"github.com/patrold/patrold/model/openai"
	"github.com/patrold/patrold/model/script"
)

// Options tune the wrappers New adds; the zero value takes the defaults.
type Options struct {
	Breaker model.BreakerOptions
}

// New returns the provider opts select, or nil (and no error) for
// provider none. The API key is read here, from the file or environment
// variable the options name, and handed to the client only. The result
// records metrics on reg (nil: none) and fails fast while its breaker is
// open.
func New(opts model.Options, reg prometheus.Registerer) (model.Provider, error) {
	return NewWith(opts, reg, Options{})
}

// NewWith is New with wrapper options (a test clock for the breaker).
func NewWith(opts model.Options, reg prometheus.Registerer, w Options) (model.Provider, error) {
	if opts.Provider == "" {
		opts.Provider = model.DefaultProvider
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	base, err := build(opts)
	if err != nil || base == nil {
		return nil, err
	}
	m, err := newMetrics(reg, base.Name())
	if err != nil {
		return nil, err
	}
	bo := w.Breaker
	bo.OnStateChange = m.breakerState
	br, err := model.NewBreaker(base, bo)
	if err != nil {
		return nil, err
	}
	return &instrumented{next: br, m: m}, nil
}

func build(opts model.Options) (model.Provider, error) {
	switch opts.Provider {
	case model.ProviderNone:
		return nil, nil
	case model.ProviderOpenAI:
		key, err := opts.OpenAI.LoadAPIKey(model.ProviderOpenAI)
		if err != nil {
			return nil, err
		}
		ep, _ := opts.Endpoint()
		return openai.New(openai.Options{Endpoint: ep, APIKey: model.Secret(key)})
	case model.ProviderAnthropic:
		key, err := opts.Anthropic.LoadAPIKey(model.ProviderAnthropic)
		if err != nil {
			return nil, err
		}
		ep, _ := opts.Endpoint()
		return anthropic.New(anthropic.Options{Endpoint: ep, APIKey: model.Secret(key)})
	case model.ProviderScript:
		return script.Load(opts.Script.Path)
	}
	return nil, fmt.Errorf("model.provider: %q is not one of none, openai, anthropic, script", opts.Provider)
}

// instrumented counts outcomes, tokens and latency of every call.
type instrumented struct {
	next model.Provider
	m    *metrics
}

var _ model.Provider = (*instrumented)(nil)

func (p *instrumented) Name() string { return p.next.Name() }

func (p *instrumented) Chat(ctx context.Context, req model.Request) (*model.Response, error) {
	start := time.Now()
	resp, err := p.next.Chat(ctx, req)
	p.m.duration.Observe(time.Since(start).Seconds())
	switch {
	case err == nil:
		p.m.requests.WithLabelValues(outcomeOK).Inc()
		p.m.tokens.WithLabelValues(directionInput).Add(float64(resp.Usage.InputTokens))
		p.m.tokens.WithLabelValues(directionOutput).Add(float64(resp.Usage.OutputTokens))
	case errors.Is(err, model.ErrCircuitOpen):
		p.m.requests.WithLabelValues(outcomeCircuitOpen).Inc()
	default:
		p.m.requests.WithLabelValues(string(model.KindOf(err))).Inc()
	}
	return resp, err
}

package model

import (
	"fmt"
	"math"
	"strings"
)

// Token estimation for budgeting before a call. Providers count tokens with
// their own tokenizers; patrold only needs a cheap, slightly pessimistic
// figure to decide whether a call fits the context window and the budget.
const (
	// CharsPerToken is the divisor of the estimate: English prose and JSON
	// average close to four characters a token for current tokenizers.
	CharsPerToken = 4
	// MessageOverheadTokens is added per message and per tool definition for
	// the role markers and framing the wire format adds around each one.
	MessageOverheadTokens = 4
	tokensPerMillion      = 1_000_000
)

// EstimateTokens estimates the input tokens of req. It counts the
// characters of the system text, of every message (content, tool call names
// and arguments) and of every tool definition (name, description, parameter
// schema). It divides them by CharsPerToken, rounded up, and adds
// MessageOverheadTokens per message and per tool.
func EstimateTokens(req Request) int {
	chars := len(req.System)
	items := 1
	for _, m := range req.Messages {
		items++
		chars += len(m.Content) + len(m.ToolCallID) + len(m.ToolName)
		for _, c := range m.ToolCalls {
			chars += len(c.ID) + len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range req.Tools {
		items++
		chars += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return ceilDiv(chars, CharsPerToken) + items*MessageOverheadTokens
}

// EstimateTextTokens estimates the tokens of a bare text.
func EstimateTextTokens(s string) int { return ceilDiv(len(s), CharsPerToken) }

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// Price is the cost of one model in US dollars per million tokens.
type Price struct {
	InputPerMTok  float64 `koanf:"input_per_mtok" json:"input_per_mtok" yaml:"input_per_mtok"`
	OutputPerMTok float64 `koanf:"output_per_mtok" json:"output_per_mtok" yaml:"output_per_mtok"`
	// CacheReadPerMTok prices input read from the prompt cache (0: the
	// input price, so an unpriced cache never lowers spend).
	CacheReadPerMTok float64 `koanf:"cache_read_per_mtok" json:"cache_read_per_mtok,omitempty" yaml:"cache_read_per_mtok,omitempty"`
	// CacheWritePerMTok prices input written to the prompt cache (0: the
	// input price).
	CacheWritePerMTok float64 `koanf:"cache_write_per_mtok" json:"cache_write_per_mtok,omitempty" yaml:"cache_write_per_mtok,omitempty"`
}

func (p Price) validate(name string) []string {
	var errs []string
	check := func(field string, v float64) {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			errs = append(errs, fmt.Sprintf("model.prices.%s.%s: %g must be a non-negative number", name, field, v))
		}
	}
	check("input_per_mtok", p.InputPerMTok)
	check("output_per_mtok", p.OutputPerMTok)
	check("cache_read_per_mtok", p.CacheReadPerMTok)
	check("cache_write_per_mtok", p.CacheWritePerMTok)
	return errs
}

// Cost returns the dollar cost of u at price p. Cached input is priced at
// the cache rates where they are configured, else as plain input.
func (p Price) Cost(u Usage) float64 {
	read, write := p.InputPerMTok, p.InputPerMTok
	//mutate:cache-read-price ./model ^TestCostPricesCacheApart$
	if p.CacheReadPerMTok > 0 {
		read = p.CacheReadPerMTok
	}
	if p.CacheWritePerMTok > 0 {
		write = p.CacheWritePerMTok
	}
	in := float64(u.Uncached())*p.InputPerMTok + float64(u.CacheReadTokens)*read + float64(u.CacheWriteTokens)*write
	return (in + float64(u.OutputTokens)*p.OutputPerMTok) / tokensPerMillion
}

// Prices maps model names to prices. A model without a price costs nothing
// (local models); Options.Validate refuses a budget without a price for the
// configured model.
type Prices map[string]Price

// Cost returns the dollar cost of u for the named model. A model name the
// server reports with a version suffix ("gpt-4o-2024-08-06") takes the
// price of the longest configured name it starts with ("gpt-4o").
func (ps Prices) Cost(model string, u Usage) float64 {
	p, ok := ps.Lookup(model)
	if !ok {
		return 0
	}
	return p.Cost(u)
}

// Lookup returns the price of model: an exact entry, else the longest
// configured name that model starts with.
func (ps Prices) Lookup(model string) (Price, bool) {
	if p, ok := ps[model]; ok {
		return p, true
	}
	best, found := "", false
	for name := range ps {
		if name != "" && strings.HasPrefix(model, name) && len(name) > len(best) {
			best, found = name, true
		}
	}
	return ps[best], found
}

// EstimateCost is the worst-case cost of sending req to model: the estimated
// input tokens plus maxOutput output tokens.
func (ps Prices) EstimateCost(model string, req Request, maxOutput int) float64 {
	return ps.Cost(model, Usage{InputTokens: EstimateTokens(req), OutputTokens: maxOutput})
}

// FitOutput returns the output budget for req (the smaller of the
// configured maximum and req.MaxTokens) and refuses, as a bad request of
// provider, a request whose estimate plus that output exceeds the window.
func FitOutput(provider string, req Request, maxOutput, contextWindow int) (int, error) {
	out := maxOutput
	if req.MaxTokens > 0 && req.MaxTokens < out {
		out = req.MaxTokens
	}
	if est := EstimateTokens(req); est+out > contextWindow {
		return 0, NewError(provider, ErrorBadRequest, 0,
			fmt.Sprintf("request estimated at %d tokens plus %d output exceeds context window %d", est, out, contextWindow), nil)
	}
	return out, nil
}

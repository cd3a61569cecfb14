package model

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// $10 per million input tokens, $30 per million output tokens.
var testPrices = Prices{"m": {InputPerMTok: 10, OutputPerMTok: 30}}

func TestCost(t *testing.T) {
	got := testPrices.Cost("m", Usage{InputTokens: 100_000, OutputTokens: 10_000})
	if got != 1.3 {
		t.Fatalf("cost = %v, want 1.3", got)
	}
	if testPrices.Cost("local", Usage{InputTokens: 1e6}) != 0 {
		t.Fatal("an unpriced model must cost nothing")
	}
}

func TestEstimateTokens(t *testing.T) {
	req := Request{System: strings.Repeat("s", 400), Messages: []Message{
		{Role: RoleUser, Content: strings.Repeat("u", 400)},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "get", Arguments: []byte(`{"a":1}`)}}},
	}, Tools: []ToolDef{{Name: "get", Description: strings.Repeat("d", 93), Parameters: []byte(`{}`)}}}
	// chars: 400 + 400 + (2+3+7) + (3+93+2) = 910 -> 228 tokens; items: system + 2 messages + 1 tool = 4 x 4.
	if got := EstimateTokens(req); got != 228+16 {
		t.Fatalf("estimate = %d, want %d", got, 228+16)
	}
	if got := testPrices.EstimateCost("m", Request{System: strings.Repeat("x", 4000)}, 1000); got != (1004*10+1000*30)/1e6 {
		t.Fatalf("estimated cost = %v", got)
	}
}

// scripted is a provider returning a fixed usage per call.
type scripted struct {
	usage Usage
	calls int
}

func (s *scripted) Name() string { return "scripted" }
func (s *scripted) Chat(context.Context, Request) (*Response, error) {
	s.calls++
	return &Response{Text: "turn", Usage: s.usage, Model: "m", ToolCalls: []ToolCall{{ID: "x", Name: "get"}}}, nil
}

// runLoop is the loop the patrol runner follows: pre-flight, then one turn
// at a time, checking the budget after each.
func runLoop(b *Budget, p Provider, maxTurns int) (turns int, reason string) {
	if err := b.Allow(t0, 0); err != nil {
		return 0, ReasonBudgetExhausted
	}
	for turns < maxTurns {
		resp, err := p.Chat(context.Background(), Request{})
		if err != nil {
			return turns, "error"
		}
		turns++
		if _, err := b.Record(t0, resp.Usage, resp.Model); err != nil {
			return turns, "ledger"
		}
		if b.Exhausted() {
			return turns, ReasonBudgetExhausted
		}
	}
	return turns, "done"
}

func TestRunStopsAfterTheTurnThatExhaustsTheBudget(t *testing.T) {
	// Each turn costs 100k input ($1) + 10k output ($0.30) = $1.30.
	b, err := NewBudget(BudgetOptions{PerRunUSD: 5}, testPrices, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &scripted{usage: Usage{InputTokens: 100_000, OutputTokens: 10_000}}
	turns, reason := runLoop(b, p, 40)
	if turns != 4 || reason != ReasonBudgetExhausted || p.calls != 4 {
		t.Fatalf("turns = %d, reason = %s, calls = %d; want the 4th turn ($5.20) to finish and stop the run", turns, reason, p.calls)
	}
	var be *BudgetError
	if !errors.As(b.Err(), &be) || be.Limit != LimitPerRun || !errors.Is(b.Err(), ErrBudgetExhausted) {
		t.Fatalf("Err = %v", b.Err())
	}
	if err := b.Allow(t0, 0); !errors.Is(err, ErrBudgetExhausted) {
		t.Fatalf("an exhausted budget allowed another call: %v", err)
	}
	if ReasonBudgetExhausted != "budget_exhausted" {
		t.Fatal("reason string is part of the run report contract")
	}
}

func TestPreflightRefusesACallThatWouldExceed(t *testing.T) {
	b, _ := NewBudget(BudgetOptions{PerRunUSD: 1}, testPrices, nil)
	if err := b.Allow(t0, 0.9); err != nil {
		t.Fatalf("0.9 of 1: %v", err)
	}
	if err := b.Allow(t0, 1.1); !errors.Is(err, ErrBudgetExhausted) {
		t.Fatalf("1.1 of 1 allowed: %v", err)
	}
}

func TestDayAnd30DayWindowsUseTheLedger(t *testing.T) {
	ledger := &MemoryLedger{}
	ledger.Add(t0.Add(-25*time.Hour), 8) // outside the day, inside 30 days
	ledger.Add(t0.Add(-time.Hour), 3)    // inside the day
	ledger.Add(t0.Add(-31*24*time.Hour), 1000)
	b, err := NewBudget(BudgetOptions{PerDayUSD: 4, Per30dUSD: 20}, testPrices, ledger)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Allow(t0, 0.5); err != nil {
		t.Fatalf("3 + 0.5 of 4 per day: %v", err)
	}
	err = b.Allow(t0, 1.5)
	var be *BudgetError
	if !errors.As(err, &be) || be.Limit != LimitPerDay || be.SpentUSD != 3 {
		t.Fatalf("day limit: %v", err)
	}
	// The run's own spend counts on top of the ledger.
	_, _ = b.Record(t0, Usage{InputTokens: 100_000}, "m") // $1 -> day total 4
	if !b.Exhausted() {
		t.Fatal("day limit reached but not exhausted")
	}
	// A day later the day window is free again, the 30-day window is not.
	b2, _ := NewBudget(BudgetOptions{PerDayUSD: 4, Per30dUSD: 12}, testPrices, ledger)
	err = b2.Allow(t0.Add(24*time.Hour), 2)
	if !errors.As(err, &be) || be.Limit != LimitPer30d {
		t.Fatalf("30-day limit: %v", err)
	}
}

type brokenLedger struct{}

func (brokenLedger) Spent(time.Time) (float64, error) { return 0, errors.New("database is locked") }

func TestLedgerFailureFailsClosed(t *testing.T) {
	b, _ := NewBudget(BudgetOptions{PerDayUSD: 4}, testPrices, brokenLedger{})
	if err := b.Allow(t0, 0); err == nil {
		t.Fatal("unknown spend allowed")
	}
	if _, err := b.Record(t0, Usage{}, "m"); err == nil || !b.Exhausted() {
		t.Fatal("a ledger failure after a turn must stop the run")
	}
}

func TestUnlimitedBudget(t *testing.T) {
	b, err := NewBudget(BudgetOptions{}, testPrices, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = b.Record(t0, Usage{InputTokens: 1e9}, "m")
	if b.Exhausted() || b.Allow(t0, 1e6) != nil {
		t.Fatal("0 means unlimited")
	}
	if _, err := NewBudget(BudgetOptions{PerDayUSD: 1}, nil, nil); err == nil {
		t.Fatal("day limit without a ledger accepted")
	}
}

func TestPriceLookupBySuffixedModelName(t *testing.T) {
	ps := Prices{"gpt-4o": {InputPerMTok: 2.5}, "gpt-4o-mini": {InputPerMTok: 0.15}}
	for model, want := range map[string]float64{"gpt-4o": 2.5, "gpt-4o-2024-08-06": 2.5, "gpt-4o-mini-2024-07-18": 0.15, "llama3": 0} {
		if got := ps.Cost(model, Usage{InputTokens: 1_000_000}); got != want {
			t.Errorf("%s costs %v, want %v", model, got, want)
		}
	}
}

func TestCarryCountsTowardsPerRun(t *testing.T) {
	b, err := NewBudget(BudgetOptions{PerRunUSD: 1}, testPrices, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b.Carry(0.6)
	if b.Exhausted() || b.Spent() != 0.6 {
		t.Fatalf("after carrying 0.6: exhausted %v spent %g", b.Exhausted(), b.Spent())
	}
	if err := b.Allow(now, 0.5); err == nil {
		t.Fatal("a call past the limit with carried spend was allowed")
	}
	b.Carry(0.4)
	var be *BudgetError
	if !b.Exhausted() || !errors.As(b.Err(), &be) || be.Limit != LimitPerRun || be.SpentUSD != 1 {
		t.Fatalf("after carrying 1.0: %v", b.Err())
	}
}

// TestCostPricesCacheApart: cached input is a part of InputTokens, priced
// at the configured cache rates; without them it costs as plain input.
func TestCostPricesCacheApart(t *testing.T) {
	ps := Prices{
		"cached": {InputPerMTok: 10, OutputPerMTok: 30, CacheReadPerMTok: 1, CacheWritePerMTok: 12.5},
		"plain":  {InputPerMTok: 10, OutputPerMTok: 30},
	}
	u := Usage{InputTokens: 1_000_000, OutputTokens: 100_000, CacheReadTokens: 600_000, CacheWriteTokens: 200_000}
	// 200k uncached x 10 + 600k x 1 + 200k x 12.5 + 100k x 30, per million.
	if got := ps.Cost("cached", u); got != 2+0.6+2.5+3 {
		t.Fatalf("cost with cache prices = %v, want 8.1", got)
	}
	if got := ps.Cost("plain", u); got != 10+3 {
		t.Fatalf("cost without cache prices = %v, want 13 (cached input at the input price)", got)
	}
	// A budget records the discounted cost of a turn.
	b, err := NewBudget(BudgetOptions{PerRunUSD: 100}, ps, nil)
	if err != nil {
		t.Fatal(err)
	}
	cost, err := b.Record(t0, u, "cached")
	if err != nil || cost != 8.1 || b.Spent() != 8.1 {
		t.Fatalf("recorded %v (spent %v, err %v), want 8.1", cost, b.Spent(), err)
	}
}

func TestUsageAddSub(t *testing.T) {
	a := Usage{InputTokens: 100, OutputTokens: 10, CacheReadTokens: 60, CacheWriteTokens: 20}
	b := Usage{InputTokens: 50, OutputTokens: 5, CacheReadTokens: 40}
	if got := a.Add(b); got != (Usage{InputTokens: 150, OutputTokens: 15, CacheReadTokens: 100, CacheWriteTokens: 20}) {
		t.Fatalf("add = %+v", got)
	}
	if got := a.Add(b).Sub(a); got != b {
		t.Fatalf("sub = %+v, want %+v", got, b)
	}
	if got := (Usage{InputTokens: 10, CacheReadTokens: 30}).Uncached(); got != 0 {
		t.Fatalf("uncached of an inconsistent report = %d, want 0", got)
	}
	if got := a.Uncached(); got != 20 {
		t.Fatalf("uncached = %d, want 20", got)
	}
}

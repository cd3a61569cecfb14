package model

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// ReasonBudgetExhausted is the run status reason used when a budget stops
// the model stages (status_reasons, docs/API.md).
const ReasonBudgetExhausted = "budget_exhausted"

// Budget windows.
const (
	DayWindow    = 24 * time.Hour
	MonthWindow  = 30 * 24 * time.Hour
	LimitPerRun  = "per_run_usd"
	LimitPerDay  = "per_day_usd"
	LimitPer30d  = "per_30d_usd"
	LimitLedger  = "ledger_unavailable" // past spend could not be read: fail closed
	budgetPrefix = "model.budget."
)

// ErrBudgetExhausted is matched (errors.Is) by every *BudgetError.
var ErrBudgetExhausted = errors.New(ReasonBudgetExhausted)

// BudgetOptions are the spending limits in US dollars; 0 means unlimited.
type BudgetOptions struct {
	PerRunUSD float64 `koanf:"per_run_usd" json:"per_run_usd" yaml:"per_run_usd"`
	PerDayUSD float64 `koanf:"per_day_usd" json:"per_day_usd" yaml:"per_day_usd"`
	Per30dUSD float64 `koanf:"per_30d_usd" json:"per_30d_usd" yaml:"per_30d_usd"`
}

// Limited reports whether any limit is set.
func (b BudgetOptions) Limited() bool { return b.PerRunUSD > 0 || b.PerDayUSD > 0 || b.Per30dUSD > 0 }

func (b BudgetOptions) validate() []string {
	var errs []string
	for _, f := range []struct {
		key string
		v   float64
	}{{LimitPerRun, b.PerRunUSD}, {LimitPerDay, b.PerDayUSD}, {LimitPer30d, b.Per30dUSD}} {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			errs = append(errs, fmt.Sprintf("%s%s: %g must be a non-negative number (0 = unlimited)", budgetPrefix, f.key, f.v))
		}
	}
	return errs
}

// SpendLedger reports model spend already recorded by finished runs and
// sessions. The daemon backs it with the run records in SQLite.
type SpendLedger interface {
	Spent(since time.Time) (float64, error)
}

// BudgetError says which limit a call would exceed or has exceeded.
type BudgetError struct {
	Limit    string  // LimitPerRun, LimitPerDay, LimitPer30d or LimitLedger
	LimitUSD float64 // the configured limit
	SpentUSD float64 // spend in the window, including this run
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("%s: %s%s %.4f reached (spent %.4f)", ReasonBudgetExhausted, budgetPrefix, e.Limit, e.LimitUSD, e.SpentUSD)
}

// Is makes errors.Is(err, ErrBudgetExhausted) true.
func (e *BudgetError) Is(target error) bool { return target == ErrBudgetExhausted }

// Budget tracks the spend of one run or session against the configured
// limits. Past spend for the day and 30-day windows comes from the ledger;
// the run's own spend is added on top, since it is not in the ledger until
// the run record is written. Safe for concurrent use.
type Budget struct {
	opts   BudgetOptions
	prices Prices
	ledger SpendLedger

	mu        sync.Mutex
	runSpent  float64
	exhausted *BudgetError
	err       error
}

// NewBudget builds the budget of one run. The ledger may be nil when no
// day or 30-day limit is set.
func NewBudget(opts BudgetOptions, prices Prices, ledger SpendLedger) (*Budget, error) {
	if errs := opts.validate(); len(errs) > 0 {
		return nil, &ValidationError{Problems: errs}
	}
	if ledger == nil && (opts.PerDayUSD > 0 || opts.Per30dUSD > 0) {
		return nil, errors.New("model budget: a spend ledger is required for per_day_usd and per_30d_usd")
	}
	return &Budget{opts: opts, prices: prices, ledger: ledger}, nil
}

// Allow is the pre-flight check: nil when a call estimated to cost
// estimated dollars fits every limit, else a *BudgetError (or the ledger's
// error: an unknown spend fails closed).
func (b *Budget) Allow(now time.Time, estimated float64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.exhausted != nil {
		return b.exhausted
	}
	return b.check(now, estimated)
}

// Record adds the cost of one finished turn, priced for the named model,
// and re-checks the limits; after it, Exhausted says whether the run must
// stop calling the model. It returns the turn's cost.
func (b *Budget) Record(now time.Time, u Usage, modelName string) (float64, error) {
	cost := b.prices.Cost(modelName, u)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runSpent += cost
	err := b.check(now, 0)
	var be *BudgetError
	switch {
	case errors.As(err, &be):
		b.exhausted = be
		return cost, nil
	case err != nil:
		// The ledger failed: stop spending rather than guess.
		b.exhausted = &BudgetError{Limit: LimitLedger, SpentUSD: b.runSpent}
		b.err = err
		return cost, err
	}
	return cost, nil
}

// Exhausted reports whether a limit has been reached.
func (b *Budget) Exhausted() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.exhausted != nil
}

// Err returns the *BudgetError that exhausted the budget, or nil.
func (b *Budget) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.exhausted == nil {
		return nil
	}
	if b.err != nil {
		return errors.Join(b.exhausted, b.err)
	}
	return b.exhausted
}

// Carry adds spend made before this budget existed to the run's own spend
// (a session resumed after an approval is one session for per_run_usd)
// and re-checks the per-run limit.
func (b *Budget) Carry(usd float64) {
	if usd <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runSpent += usd
	if b.opts.PerRunUSD > 0 && b.runSpent >= b.opts.PerRunUSD && b.exhausted == nil {
		b.exhausted = &BudgetError{Limit: LimitPerRun, LimitUSD: b.opts.PerRunUSD, SpentUSD: b.runSpent}
	}
}

// Spent returns the run's own spend so far (carried spend included).
func (b *Budget) Spent() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.runSpent
}

// check compares run + window spend (+ extra) with each limit. A limit is
// reached when spend+extra exceeds it, or when extra is 0 and spend has
// reached it exactly.
func (b *Budget) check(now time.Time, extra float64) error {
	over := func(limit, spent float64) bool {
		if limit <= 0 {
			return false
		}
		return spent+extra > limit || spent >= limit
	}
	if over(b.opts.PerRunUSD, b.runSpent) {
		return &BudgetError{Limit: LimitPerRun, LimitUSD: b.opts.PerRunUSD, SpentUSD: b.runSpent}
	}
	for _, w := range []struct {
		name   string
		limit  float64
		window time.Duration
	}{{LimitPerDay, b.opts.PerDayUSD, DayWindow}, {LimitPer30d, b.opts.Per30dUSD, MonthWindow}} {
		if w.limit <= 0 {
			continue
		}
		past, err := b.ledger.Spent(now.Add(-w.window))
		if err != nil {
			return fmt.Errorf("model budget: read spend ledger: %w", err)
		}
		if over(w.limit, past+b.runSpent) {
			return &BudgetError{Limit: w.name, LimitUSD: w.limit, SpentUSD: past + b.runSpent}
		}
	}
	return nil
}

// MemoryLedger is an in-memory SpendLedger for tests and one-shot runs.
type MemoryLedger struct {
	mu      sync.Mutex
	entries []ledgerEntry
}

type ledgerEntry struct {
	at  time.Time
	usd float64
}

var _ SpendLedger = (*MemoryLedger)(nil)

// Add records usd spent at time at.
func (l *MemoryLedger) Add(at time.Time, usd float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, ledgerEntry{at: at, usd: usd})
}

// Spent returns the spend recorded at or after since.
func (l *MemoryLedger) Spent(since time.Time) (float64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var total float64
	for _, e := range l.entries {
		if !e.at.Before(since) {
			total += e.usd
		}
	}
	return total, nil
}

package agent

import (
	"fmt"
	"sync"
)

// CallBudget is a per-session call counter supplied by the caller, such as
// an investigation's evidence budget (10 calls) or a run's report budget.
// A call that a budget counts is refused with BUDGET_EXHAUSTED once Limit
// calls have been admitted.
type CallBudget struct {
	// Name identifies the budget in refusals ("evidence", "report").
	Name string
	// Limit is the number of calls admitted; it must be positive.
	Limit int
	// Counts selects the calls this budget applies to; nil counts every
	// call that is not an operator question.
	Counts func(tool string, kind ToolKind, target WriteTarget) bool

	mu   sync.Mutex
	used int
}

// NewCallBudget returns a budget of limit calls.
func NewCallBudget(name string, limit int, counts func(string, ToolKind, WriteTarget) bool) (*CallBudget, error) {
	b := &CallBudget{Name: name, Limit: limit, Counts: counts}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	return b, nil
}

// Validate checks the budget, naming the field.
func (b *CallBudget) Validate() error {
	if b.Name == "" {
		return fmt.Errorf("name: required")
	}
	if b.Limit <= 0 {
		return fmt.Errorf("limit: must be positive, got %d", b.Limit)
	}
	return nil
}

func (b *CallBudget) applies(tool string, kind ToolKind, target WriteTarget) bool {
	if b.Counts == nil {
		return kind != KindUserInput
	}
	return b.Counts(tool, kind, target)
}

// Used returns how many counted calls have been admitted.
func (b *CallBudget) Used() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Remaining returns how many counted calls may still be admitted.
func (b *CallBudget) Remaining() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(b.Limit-b.used, 0)
}

// Spend records n calls already made elsewhere (a session resumed after an
// approval carries the calls it made before it parked).
func (b *CallBudget) Spend(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used += max(n, 0)
}

func (b *CallBudget) take() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used++
}

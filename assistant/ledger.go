package assistant

import (
	"context"
	"fmt"
	"time"

	"github.com/patrold/patrold/model"
)

// RunLedger reports the spend of runs alone; the store is one.
type RunLedger interface {
	RunSpent(since time.Time) (float64, error)
}

// ledger is the spend ledger a session's budget reads: finished runs (the
// configured Ledger, or the Store's RunSpent when it has one) plus other
// sessions (the session's own earlier spend is carried by its budget
// instead).
func (a *Assistant) ledger(sessionID string) model.SpendLedger {
	runs := a.opts.Ledger
	if rl, ok := a.opts.Store.(RunLedger); ok && runs == nil {
		runs = spendFunc(rl.RunSpent)
	}
	return spendFunc(func(since time.Time) (float64, error) {
		var total float64
		if runs != nil {
			r, err := runs.Spent(since)
			if err != nil {
				return 0, err
			}
			total += r
		}
		s, err := a.opts.Store.SessionSpent(context.Background(), since, sessionID)
		if err != nil {
			return 0, fmt.Errorf("assistant: %w", err)
		}
		return total + s, nil
	})
}

type spendFunc func(since time.Time) (float64, error)

func (f spendFunc) Spent(since time.Time) (float64, error) { return f(since) }

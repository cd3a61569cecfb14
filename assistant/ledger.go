package assistant

import (
	"context"
	"fmt"
	"time"

	"github.com/patrold/patrold/model"
)

// ledger is the spend ledger a session's budget reads: finished runs (the
// configured Ledger, or the Store when it is one) plus other sessions (the
// session's own earlier spend is carried by its budget instead).
func (a *Assistant) ledger(sessionID string) model.SpendLedger {
	runs := a.opts.Ledger
	if runs == nil {
		runs, _ = a.opts.Store.(model.SpendLedger)
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
		var s float64
		err := a.opts.Store.DB().QueryRowContext(context.Background(),
			`SELECT COALESCE(SUM(cost_usd), 0) FROM remediation_sessions WHERE started_at >= ? AND id != ?`, fmtTime(since), sessionID).Scan(&s)
		if err != nil {
			return 0, fmt.Errorf("assistant: session spend: %w", err)
		}
		return total + s, nil
	})
}

type spendFunc func(since time.Time) (float64, error)

func (f spendFunc) Spent(since time.Time) (float64, error) { return f(since) }

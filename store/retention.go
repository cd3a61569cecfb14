package store

import (
	"context"
	"fmt"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store/records"
)

// pruneTables are the tables Prune sweeps and what "old" means in each.
// Each condition takes the cutoff as its one parameter.
var pruneTables = []struct {
	table, cond string
	keep        func(findings.Retention) time.Duration
	layout      string
}{
	{"runs", "status NOT IN ('running') AND finished_at IS NOT NULL AND finished_at < ?", func(r findings.Retention) time.Duration { return r.Runs }, timeLayout},
	{"audit_events", "at < ?", func(r findings.Retention) time.Duration { return r.Audit }, auditTimeLayout},
	{"investigations", "ended_at IS NOT NULL AND ended_at < ?", func(r findings.Retention) time.Duration { return r.Investigations }, timeLayout},
	{"remediation_sessions", "finished_at IS NOT NULL AND finished_at < ? AND id NOT IN (SELECT session_id FROM approvals WHERE state = 'pending')",
		func(r findings.Retention) time.Duration { return r.Sessions }, timeLayout},
	{"approvals", "state <> 'pending' AND coalesce(decided_at, expires_at) < ?", func(r findings.Retention) time.Duration { return r.Approvals }, timeLayout},
	{"silences", "ends_at < ?", func(r findings.Retention) time.Duration { return r.Silences }, timeLayout},
}

// PruneTables lists the tables Prune sweeps (metrics pre-create them).
func PruneTables() []string {
	out := make([]string, 0, len(pruneTables))
	for _, t := range pruneTables {
		out = append(out, t.table)
	}
	return out
}

// Prune deletes history older than its retention, PruneBatch rows per
// statement, and returns what it deleted. A zero duration keeps the table.
func (s *Store) Prune(ctx context.Context, now time.Time, r findings.Retention) (records.Pruned, error) {
	out := records.Pruned{}
	for _, t := range pruneTables {
		keep := t.keep(r)
		if keep <= 0 {
			continue
		}
		cutoff := now.Add(-keep).UTC().Format(t.layout)
		q := "DELETE FROM " + t.table + " WHERE rowid IN (SELECT rowid FROM " + t.table + " WHERE " + t.cond + " LIMIT ?)"
		for {
			res, err := s.exec(ctx, q, cutoff, findings.PruneBatch)
			if err != nil {
				return out, fmt.Errorf("prune %s: %w", t.table, err)
			}
			n, _ := res.RowsAffected()
			out[t.table] += n
			if n < findings.PruneBatch {
				break
			}
		}
	}
	return out, nil
}

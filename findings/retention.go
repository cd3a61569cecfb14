package findings

import (
	"context"
	"fmt"
	"time"
)

// Retention says how long each kind of history is kept; swept after every
// run (resolved findings have their own findings.resolved_retention).
type Retention struct {
	// Runs: run records with their reports and model exchanges, by
	// finish time. At least 30 days: the model's 30-day budget reads them.
	Runs time.Duration `koanf:"runs" yaml:"runs"`
	// Audit: audit events of mutating API calls.
	Audit time.Duration `koanf:"audit" yaml:"audit"`
	// Investigations: ended investigation records of findings.
	Investigations time.Duration `koanf:"investigations" yaml:"investigations"`
	// Sessions: finished remediation sessions and their transcripts.
	Sessions time.Duration `koanf:"sessions" yaml:"sessions"`
	// Approvals: decided or expired write approvals.
	Approvals time.Duration `koanf:"approvals" yaml:"approvals"`
	// Silences: silences, counted from their end.
	Silences time.Duration `koanf:"silences" yaml:"silences"`
}

// Retention defaults.
const (
	DefaultRunRetention           = 720 * time.Hour  // 30 days
	DefaultAuditRetention         = 2160 * time.Hour // 90 days
	DefaultInvestigationRetention = 2160 * time.Hour
	DefaultSessionRetention       = 2160 * time.Hour
	DefaultApprovalRetention      = 720 * time.Hour
	DefaultSilenceRetention       = 720 * time.Hour
	// MinRunRetention: the spend ledger of the 30-day model budget is the
	// runs table.
	MinRunRetention = 720 * time.Hour
	// PruneBatch rows are deleted per statement, so a large backlog never
	// holds the write lock for long.
	PruneBatch = 1000
)

// DefaultRetention is every retention at its default.
func DefaultRetention() Retention {
	return Retention{Runs: DefaultRunRetention, Audit: DefaultAuditRetention, Investigations: DefaultInvestigationRetention,
		Sessions: DefaultSessionRetention, Approvals: DefaultApprovalRetention, Silences: DefaultSilenceRetention}
}

// Validate names the key (under prefix, e.g. "retention.").
func (r Retention) Validate(prefix string) []string {
	var out []string
	for _, c := range []struct {
		key string
		d   time.Duration
	}{{"runs", r.Runs}, {"audit", r.Audit}, {"investigations", r.Investigations}, {"sessions", r.Sessions},
		{"approvals", r.Approvals}, {"silences", r.Silences}} {
		if c.d < time.Hour {
			out = append(out, fmt.Sprintf("%s%s: %s is shorter than 1h", prefix, c.key, c.d))
		}
	}
	if r.Runs >= time.Hour && r.Runs < MinRunRetention {
		out = append(out, fmt.Sprintf("%sruns: %s is shorter than %s (the 30-day model budget reads the runs)", prefix, r.Runs, MinRunRetention))
	}
	return out
}

// Pruned counts the rows a prune deleted, by table.
type Pruned map[string]int64

// pruneTables are the tables Prune sweeps and what "old" means in each.
// Each condition takes the cutoff as its one parameter.
var pruneTables = []struct {
	table, cond string
	keep        func(Retention) time.Duration
	layout      string
}{
	{"runs", "status NOT IN ('running') AND finished_at IS NOT NULL AND finished_at < ?", func(r Retention) time.Duration { return r.Runs }, timeLayout},
	{"audit_events", "at < ?", func(r Retention) time.Duration { return r.Audit }, "2006-01-02T15:04:05.000000000Z"},
	{"investigations", "ended_at IS NOT NULL AND ended_at < ?", func(r Retention) time.Duration { return r.Investigations }, timeLayout},
	{"remediation_sessions", "finished_at IS NOT NULL AND finished_at < ? AND id NOT IN (SELECT session_id FROM approvals WHERE state = 'pending')",
		func(r Retention) time.Duration { return r.Sessions }, timeLayout},
	{"approvals", "state <> 'pending' AND coalesce(decided_at, expires_at) < ?", func(r Retention) time.Duration { return r.Approvals }, timeLayout},
	{"silences", "ends_at < ?", func(r Retention) time.Duration { return r.Silences }, timeLayout},
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
func (s *Store) Prune(ctx context.Context, now time.Time, r Retention) (Pruned, error) {
	out := Pruned{}
	for _, t := range pruneTables {
		keep := t.keep(r)
		if keep <= 0 {
			continue
		}
		cutoff := now.Add(-keep).UTC().Format(t.layout)
		q := "DELETE FROM " + t.table + " WHERE rowid IN (SELECT rowid FROM " + t.table + " WHERE " + t.cond + " LIMIT ?)"
		for {
			res, err := s.db.ExecContext(ctx, q, cutoff, PruneBatch)
			if err != nil {
				return out, fmt.Errorf("prune %s: %w", t.table, err)
			}
			n, _ := res.RowsAffected()
			out[t.table] += n
			if n < PruneBatch {
				break
			}
		}
	}
	return out, nil
}

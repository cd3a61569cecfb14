package findings

import (
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

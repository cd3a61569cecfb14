package patrol

import (
	"context"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store/records"
)

// DefaultResolvedRetention keeps resolved findings as history for 30 days.
const DefaultResolvedRetention = findings.DefaultResolvedRetention

// handOver runs after the run record is durable: housekeeping (stuck
// investigations, retention, reminders, silence expiry), then the
// investigation gate over the run's open findings, whose requests go out
// through the outbox. Failures here are logged and reported, never undo
// the run.
func (r *Runner) handOver(ctx context.Context, set Settings, rep *Report) {
	now := r.opts.Now()
	gate := set.Gate
	if gate.MaxAttempts == 0 {
		gate = findings.DefaultGate()
	}
	if ids, err := r.opts.Store.RecoverStuck(ctx, gate, now); err != nil {
		r.log.Error("recover stuck investigations", "err", err)
	} else if len(ids) > 0 {
		r.log.Warn("investigations timed out", "findings", ids)
	}
	retention := set.ResolvedRetention
	if retention == 0 {
		retention = DefaultResolvedRetention
	}
	if _, err := r.opts.Store.Sweep(ctx, now, retention, set.Publish); err != nil {
		r.log.Error("sweep findings", "err", err)
	}
	pruned, err := r.opts.Store.Prune(ctx, now, set.Retention)
	if err != nil {
		r.log.Error("prune history", "err", err)
	}
	r.opts.Metrics.pruned(pruned)
	if n := total(pruned); n > 0 {
		r.log.Info("history pruned", "rows", n, "by_table", map[string]int64(pruned))
	}
	if set.Autonomy == "" || set.Autonomy == findings.AutonomyMonitor {
		return
	}
	var ids []string
	for _, f := range rep.Findings {
		if f.Change != findings.ChangeResolved {
			ids = append(ids, f.ID)
		}
	}
	handed, err := r.opts.Store.RequestInvestigations(ctx, ids, gate, set.Autonomy, now, func(f *findings.Finding, attempt int, epoch uint64) findings.OutboxDraft {
		subject, typ := contracts.RequestSubject()
		return findings.OutboxDraft{Subject: subject, Type: typ, ResourceID: f.ResourceID,
			Data: contracts.RemediationRequest{
				FindingID: f.ID, ResourceID: f.ResourceID, Category: string(f.Category), Key: f.Key, Severity: string(f.Severity),
				Title: f.Title, Autonomy: string(set.Autonomy), Attempt: attempt, RunID: rep.RunID, RequestedAt: now,
				Epoch: epoch,
			}}
	})
	if err != nil {
		r.log.Error("hand over to remediation", "run_id", rep.RunID, "err", err)
		return
	}
	for _, f := range handed {
		rep.HandedOver = append(rep.HandedOver, f.ID)
	}
}

func total(p records.Pruned) int64 {
	var n int64
	for _, v := range p {
		n += v
	}
	return n
}

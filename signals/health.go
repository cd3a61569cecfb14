package signals

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/snapshot"
)

// appendLevel applies a disk threshold with hysteresis. The operator's
// figures name the first bad value, so the edges are inclusive:
//   - rising (temperature): opens at or above trigger, critical at or
//     above critical, held while at or above clear;
//   - falling (wear, the life left): opens at or below trigger, critical
//     at or below critical, held while at or below clear.
//
// A missing reading is no signal (and no evidence of a cleared one).
func appendLevel(out []Signal, r *snapshot.Resource, typ Type, reading *int64, t alerts.Threshold, falling bool, active Active) []Signal {
	if reading == nil || t.Trigger <= 0 {
		return out
	}
	severity, threshold, held, ok := level(float64(*reading), t, falling, active[Key{Type: typ, ResourceID: r.ID}])
	if !ok {
		return out
	}
	s := newSignal(r, typ, severity)
	s.Value, s.Threshold = float64(*reading), threshold
	field, what, unit, edge := "temperature_c", "at", " °C", "at or above"
	if falling {
		field, what, unit, edge = "wearout_percent", "has", "% life left", "at or below"
	}
	s.Evidence = map[string]any{"field": field, "value": *reading, "trigger": t.Trigger, "clear": t.Clear}
	if t.Critical > 0 {
		s.Evidence["critical"] = t.Critical
	}
	s.Summary = fmt.Sprintf("disk %s %s %d%s, %s %s", display(r), what, *reading, unit, edge, plain(threshold))
	if held {
		s.Evidence["held_by_hysteresis"] = true
		s.Summary = fmt.Sprintf("disk %s %s %d%s, still %s clear %s after reaching %s", display(r), what, *reading, unit, edge, plain(t.Clear), plain(t.Trigger))
	}
	return append(out, s)
}

// level judges v against t, rising or falling, for a signal that was
// open before (active) or not: ok when it opens or is held (held: only
// by hysteresis), critical at or past critical.
func level(v float64, t alerts.Threshold, falling, active bool) (severity string, threshold float64, held, ok bool) {
	// reached reports whether v is at or past x in the bad direction.
	reached := func(x float64) bool {
		if falling {
			return v <= x
		}
		return v >= x
	}
	switch {
	case reached(t.Trigger):
	//mutate:disk-level-hysteresis ./signals ^TestDisk
	case reached(t.Clear) && active:
		held = true
	default:
		return "", 0, false, false
	}
	severity, threshold = SeverityWarning, t.Trigger
	//mutate:disk-level-critical ./signals ^TestDisk
	if t.Critical > 0 && reached(t.Critical) {
		severity, threshold = SeverityCritical, t.Critical
	}
	return severity, threshold, held, true
}

// appendBackupJobs: a backup datastore's failing items (jobs whose last
// run failed, backup snapshots whose last verification failed) counted
// against storage.backup_jobs, rising, with hysteresis.
func appendBackupJobs(out []Signal, r *snapshot.Resource, t alerts.Threshold, active Active) []Signal {
	bs := r.BackupStore
	if bs == nil || t.Trigger <= 0 {
		return out
	}
	var jobs []string
	lastError := ""
	for _, j := range bs.Jobs {
		//mutate:backup-job-failed-jobs ./signals ^TestBackupJobFailed
		if j.LastStatus == snapshot.BackupFailed {
			jobs = append(jobs, j.Type+" "+j.ID)
			if lastError == "" {
				lastError = j.LastError
			}
		}
	}
	n := len(jobs) + len(bs.VerifyFailed)
	severity, threshold, held, ok := level(float64(n), t, false, active[Key{Type: TypeBackupJobFailed, ResourceID: r.ID}])
	if !ok {
		return out
	}
	s := newSignal(r, TypeBackupJobFailed, severity)
	s.Value, s.Threshold = float64(n), threshold
	s.Evidence = map[string]any{"failed_jobs": len(jobs), "verify_failed": len(bs.VerifyFailed), "trigger": t.Trigger, "clear": t.Clear}
	if t.Critical > 0 {
		s.Evidence["critical"] = t.Critical
	}
	var parts []string
	if len(jobs) > 0 {
		s.Evidence["jobs"] = clip(strings.Join(jobs, ", "), MaxNameRunes)
		parts = append(parts, fmt.Sprintf("last run failed: %s", strings.Join(jobs, ", ")))
	}
	if lastError != "" {
		s.Evidence["last_error"] = clip(lastError, MaxNameRunes)
	}
	if len(bs.VerifyFailed) > 0 {
		s.Evidence["first_verify_failed"] = clip(bs.VerifyFailed[0], MaxNameRunes)
		parts = append(parts, fmt.Sprintf("%d backup snapshots failed verification", len(bs.VerifyFailed)))
	}
	if n == 0 {
		parts = append(parts, "nothing failing now")
	}
	s.Summary = fmt.Sprintf("backup datastore %s: %s (%d failing, at or above %s)", display(r), strings.Join(parts, "; "), n, plain(threshold))
	if held {
		s.Evidence["held_by_hysteresis"] = true
		s.Summary = fmt.Sprintf("backup datastore %s: %s (%d failing, still at or above clear %s after reaching %s)",
			display(r), strings.Join(parts, "; "), n, plain(t.Clear), plain(t.Trigger))
	}
	return append(out, s)
}

// nodeOffline: a node its source reports offline or unknown is critical.
func nodeOffline(r *snapshot.Resource) (Signal, bool) {
	if r.Status != snapshot.StatusOffline && r.Status != snapshot.StatusUnknown {
		return Signal{}, false
	}
	s := newSignal(r, TypeNodeOffline, SeverityCritical)
	s.Evidence = map[string]any{"status": r.Status}
	s.Summary = fmt.Sprintf("node %s is %s", display(r), r.Status)
	if r.Status == snapshot.StatusUnknown {
		s.Summary = fmt.Sprintf("node %s has status unknown: its source cannot reach it", display(r))
	}
	return s, true
}

// zfsCritical are the pool states in which the pool serves no data.
var zfsCritical = map[string]bool{"FAULTED": true, "UNAVAIL": true, "SUSPENDED": true, "OFFLINE": true, "REMOVED": true}

func zfsStateKnown(state string) bool {
	st := strings.ToUpper(strings.TrimSpace(state))
	return st == "ONLINE" || st == "DEGRADED" || zfsCritical[st]
}

// zfsPool: a pool that is DEGRADED is a warning and one that serves no
// data (FAULTED, UNAVAIL, SUSPENDED, OFFLINE, REMOVED) critical; read,
// write or checksum errors recorded on the pool (zpool counts them until
// `zpool clear`) are a warning. An unrecognised state is not judged.
func zfsPool(r *snapshot.Resource) (Signal, bool) {
	z := r.ZFS
	if z == nil || !zfsStateKnown(z.State) {
		return Signal{}, false
	}
	state := strings.ToUpper(strings.TrimSpace(z.State))
	var reasons []string
	severity := ""
	switch {
	//mutate:zfs-critical-states ./signals ^TestZFSPoolDegraded$
	case zfsCritical[state]:
		severity = SeverityCritical
		reasons = append(reasons, "state "+state)
	//mutate:zfs-degraded ./signals ^TestZFSPoolDegraded$
	case state == "DEGRADED":
		severity = SeverityWarning
		reasons = append(reasons, "state "+state)
	}
	errs := z.ReadErrors + z.WriteErrors + z.ChecksumErrors
	for _, c := range [...]struct {
		name string
		n    int64
	}{{"read errors", z.ReadErrors}, {"write errors", z.WriteErrors}, {"checksum errors", z.ChecksumErrors}} {
		if c.n > 0 {
			reasons = append(reasons, fmt.Sprintf("%s %d", c.name, c.n))
		}
	}
	//mutate:zfs-error-counters ./signals ^TestZFSPoolDegraded$
	if errs > 0 && severity == "" {
		severity = SeverityWarning
	}
	if severity == "" {
		return Signal{}, false
	}
	s := newSignal(r, TypeZFSPoolDegraded, severity)
	s.Value = float64(errs)
	s.Evidence = map[string]any{"state": state, "read_errors": z.ReadErrors, "write_errors": z.WriteErrors, "checksum_errors": z.ChecksumErrors}
	s.Summary = fmt.Sprintf("ZFS pool %s: %s", display(r), strings.Join(reasons, ", "))
	return s, true
}

// quorumLost: a cluster whose quorum was read and is lost is critical:
// pmxcfs is read only, so no guest starts, migrates or changes config.
func quorumLost(r *snapshot.Resource) (Signal, bool) {
	q := r.Quorum
	//mutate:quorum-lost ./cmd/patrold ^TestRunQuorumLost$
	if q == nil || q.Quorate {
		return Signal{}, false
	}
	s := newSignal(r, TypeQuorumLost, SeverityCritical)
	s.Evidence = map[string]any{"quorate": false, "nodes": q.Nodes, "nodes_online": q.NodesOnline}
	s.Summary = "cluster " + display(r) + " has lost quorum: " + strconv.FormatInt(q.NodesOnline, 10) + " of " +
		strconv.FormatInt(q.Nodes, 10) + " nodes online"
	return s, true
}

// haError judges a resource's HA state. A guest whose HA service is in
// error or being fenced is down and needs a hand: critical; in recovery
// or frozen it is on its way: warning. A node's LRM that is neither
// active nor idle cannot run HA guests: warning, but only watch in
// maintenance, which an operator asked for.
func haError(r *snapshot.Resource) (Signal, bool) {
	h := r.HA
	if h == nil || !h.Managed {
		return Signal{}, false
	}
	var severity string
	ev := map[string]any{"state": h.State}
	if r.Kind.Guest() {
		switch h.State {
		//mutate:ha-error-service-critical ./cmd/patrold ^TestRunHAError$
		case snapshot.HAError, snapshot.HAFence:
			severity = SeverityCritical
		//mutate:ha-error-service-warning ./cmd/patrold ^TestRunHAError$
		case snapshot.HARecovery, snapshot.HAFreeze:
			severity = SeverityWarning
		default:
			return Signal{}, false
		}
		if h.Requested != "" {
			ev["requested"] = h.Requested
		}
	} else {
		switch h.State {
		case snapshot.HAActive, snapshot.HAIdle:
			return Signal{}, false
		//mutate:ha-error-lrm-maintenance ./cmd/patrold ^TestRunHAError$
		case snapshot.HAMaintenance:
			severity = SeverityWatch
		default:
			severity = SeverityWarning
		}
		ev = map[string]any{"lrm_state": h.State}
	}
	s := newSignal(r, TypeHAError, severity)
	s.Evidence = ev
	if r.Kind.Guest() {
		s.Summary = "HA resource " + display(r) + " is in state " + quoteState(h.State)
		if h.Requested != "" {
			s.Summary += " (requested " + quoteState(h.Requested) + ")"
		}
	} else {
		s.Summary = "HA local resource manager of node " + display(r) + " is in state " + quoteState(h.State)
	}
	return s, true
}

// quoteState is an HA state for a summary, "unknown" when it is empty.
func quoteState(s string) string {
	if s == "" {
		return "unknown"
	}
	return clip(s, MaxNameRunes)
}

// appendReplication judges a guest's replication jobs. The job with the
// most failed syncs in a row is counted against guest.replication (a
// count: clear defaults to the trigger). A job whose last sync is more
// than guest.replication_lag intervals of its schedule old is a warning;
// a schedule the source did not understand skips that rule.
func appendReplication(out []Signal, r *snapshot.Resource, t alerts.Thresholds, active Active, takenAt time.Time) []Signal {
	rp := r.Replication
	if rp == nil || len(rp.Jobs) == 0 {
		return out
	}
	wasActive := active[Key{Type: TypeReplicationFailed, ResourceID: r.ID}]
	worst := &rp.Jobs[0]
	for i := range rp.Jobs {
		if rp.Jobs[i].FailCount > worst.FailCount {
			worst = &rp.Jobs[i]
		}
	}
	var late *snapshot.ReplicationJob
	lag := 0.0
	for i := range rp.Jobs {
		j := &rp.Jobs[i]
		if j.IntervalSeconds <= 0 || j.LastSync == nil {
			continue
		}
		if l := takenAt.Sub(*j.LastSync).Seconds() / float64(j.IntervalSeconds); late == nil || l > lag {
			late, lag = j, l
		}
	}
	var severity string
	var threshold float64
	failHeld, failing := false, false
	//mutate:replication-failures ./cmd/patrold ^TestRunReplicationFailed$
	if t.Replication.Trigger > 0 {
		severity, threshold, failHeld, failing = level(float64(worst.FailCount), t.Replication, false, wasActive)
	}
	lagHeld, lagging := false, false
	//mutate:replication-lag ./cmd/patrold ^TestRunReplicationFailed$
	if late != nil && t.ReplicationLag.Trigger > 0 {
		switch {
		case lag > t.ReplicationLag.Trigger:
			lagging = true
		case wasActive && lag >= t.ReplicationLag.Clear:
			lagging, lagHeld = true, true
		}
	}
	if !failing && !lagging {
		return out
	}
	job := worst
	s := newSignal(r, TypeReplicationFailed, severity)
	s.Value, s.Threshold = float64(worst.FailCount), threshold
	if !failing {
		job = late
		s.Severity, s.Value, s.Threshold = SeverityWarning, math.Round(lag*10)/10, t.ReplicationLag.Trigger
	}
	s.Evidence = map[string]any{"job": job.ID, "fail_count": job.FailCount}
	if job.Target != "" {
		s.Evidence["target"] = job.Target
	}
	if job.Error != "" {
		s.Evidence["error"] = clip(job.Error, MaxNameRunes)
	}
	if job.LastSync != nil {
		s.Evidence["last_sync"] = job.LastSync.UTC().Format(time.RFC3339)
	}
	if job.Schedule != "" {
		s.Evidence["schedule"] = job.Schedule
	}
	var parts []string
	if failing {
		s.Evidence["trigger"], s.Evidence["clear"] = t.Replication.Trigger, t.Replication.Clear
		if t.Replication.Critical > 0 {
			s.Evidence["critical"] = t.Replication.Critical
		}
		parts = append(parts, fmt.Sprintf("job %s failed %d times in a row (at or above %s)", clip(worst.ID, MaxNameRunes), worst.FailCount, plain(threshold)))
	}
	if lagging {
		s.Evidence["lag_intervals"] = math.Round(lag*10) / 10
		s.Evidence["lag_trigger"] = t.ReplicationLag.Trigger
		parts = append(parts, fmt.Sprintf("job %s last synced %s intervals of %s ago (above %s)", clip(late.ID, MaxNameRunes),
			plain(math.Round(lag*10)/10), clip(late.Schedule, MaxNameRunes), plain(t.ReplicationLag.Trigger)))
	}
	if (!failing || failHeld) && (!lagging || lagHeld) {
		s.Evidence["held_by_hysteresis"] = true
		parts = append(parts, "held until below clear")
	}
	s.Summary = "replication of " + display(r) + ": " + strings.Join(parts, "; ")
	return append(out, s)
}

// appendCertificate judges the days left on a node's first certificate
// to expire against node.certificate, falling: warning at or below the
// trigger, critical at or below critical (an expired one has less).
func appendCertificate(out []Signal, r *snapshot.Resource, t alerts.Threshold, active Active, takenAt time.Time) []Signal {
	c := r.Certificate
	if c == nil || t.Trigger <= 0 {
		return out
	}
	days := math.Floor(c.NotAfter.Sub(takenAt).Hours()/24*10) / 10
	severity, threshold, held, ok := level(days, t, true, active[Key{Type: TypeCertificateExpiring, ResourceID: r.ID}])
	//mutate:certificate-expiring:always ./cmd/patrold ^TestRunCertificateExpiring$
	if !ok {
		return out
	}
	s := newSignal(r, TypeCertificateExpiring, severity)
	s.Value, s.Threshold = days, threshold
	s.Evidence = map[string]any{"not_after": c.NotAfter.UTC().Format(time.RFC3339), "days_left": days, "trigger": t.Trigger, "clear": t.Clear}
	if t.Critical > 0 {
		s.Evidence["critical"] = t.Critical
	}
	if c.File != "" {
		s.Evidence["file"] = clip(c.File, MaxNameRunes)
	}
	if c.Subject != "" {
		s.Evidence["subject"] = clip(c.Subject, MaxNameRunes)
	}
	what := "certificate"
	if c.File != "" {
		what += " " + clip(c.File, MaxNameRunes)
	}
	switch {
	case days <= 0:
		s.Summary = fmt.Sprintf("node %s: %s expired on %s", display(r), what, c.NotAfter.UTC().Format(time.DateOnly))
	case held:
		s.Evidence["held_by_hysteresis"] = true
		s.Summary = fmt.Sprintf("node %s: %s expires in %s days, still at or below clear %s after reaching %s", display(r), what, plain(days), plain(t.Clear), plain(threshold))
	default:
		s.Summary = fmt.Sprintf("node %s: %s expires in %s days (at or below %s)", display(r), what, plain(days), plain(threshold))
	}
	return append(out, s)
}

// appendScrub judges a ZFS pool's last scrub: one that found or repaired
// errors is a warning; so is one older than storage.scrub_age days,
// held while at or above clear, or none ever; older than its critical
// days, when one is set, critical. A scrub running says nothing against
// the pool.
func appendScrub(out []Signal, r *snapshot.Resource, t alerts.Threshold, active Active, takenAt time.Time) []Signal {
	if r.ZFS == nil || r.ZFS.Scrub == nil {
		return out
	}
	sc := r.ZFS.Scrub
	s := newSignal(r, TypeZFSScrubOverdue, SeverityWarning)
	s.Evidence = map[string]any{"scrub": sc.State}
	switch sc.State {
	case snapshot.ScrubNever:
		s.Summary = "ZFS pool " + display(r) + " has never been scrubbed"
		return append(out, s)
	case snapshot.ScrubFinished:
	default:
		return out
	}
	if sc.At == nil {
		return out
	}
	days := math.Floor(takenAt.Sub(*sc.At).Hours()/24*10) / 10
	s.Evidence["last_scrub"] = sc.At.UTC().Format(time.RFC3339)
	s.Evidence["days_since"] = days
	//mutate:zfs-scrub-errors ./cmd/patrold ^TestRunZFSScrubOverdue$
	if sc.Errors > 0 || sc.Repaired != "" {
		s.Evidence["errors"] = sc.Errors
		if sc.Repaired != "" {
			s.Evidence["repaired"] = clip(sc.Repaired, MaxNameRunes)
		}
		s.Summary = fmt.Sprintf("ZFS pool %s: its last scrub on %s found %d errors and repaired %s", display(r),
			sc.At.UTC().Format(time.DateOnly), sc.Errors, orNothing(sc.Repaired))
		return append(out, s)
	}
	if t.Trigger <= 0 {
		return out
	}
	held := false
	switch {
	//mutate:zfs-scrub-age ./cmd/patrold ^TestRunZFSScrubOverdue$
	case days > t.Trigger:
	//mutate:zfs-scrub-held ./cmd/patrold ^TestRunZFSScrubOverdue$
	case active[Key{Type: TypeZFSScrubOverdue, ResourceID: r.ID}] && days >= t.Clear:
		held = true
	default:
		return out
	}
	s.Value, s.Threshold = days, t.Trigger
	s.Evidence["trigger"], s.Evidence["clear"] = t.Trigger, t.Clear
	s.Summary = fmt.Sprintf("ZFS pool %s: last scrub %s days ago, above %s", display(r), plain(days), plain(t.Trigger))
	if t.Critical > 0 {
		s.Evidence["critical"] = t.Critical
	}
	//mutate:zfs-scrub-critical ./signals ^TestScrubAgeCritical$
	if t.Critical > 0 && days > t.Critical {
		s.Severity, s.Threshold, held = SeverityCritical, t.Critical, false
		s.Summary = fmt.Sprintf("ZFS pool %s: last scrub %s days ago, above critical %s", display(r), plain(days), plain(t.Critical))
	}
	if held {
		s.Evidence["held_by_hysteresis"] = true
		s.Summary = fmt.Sprintf("ZFS pool %s: last scrub %s days ago, still at or above clear %s after exceeding %s", display(r), plain(days), plain(t.Clear), plain(t.Trigger))
	}
	return append(out, s)
}

func orNothing(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

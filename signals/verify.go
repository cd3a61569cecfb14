package signals

import (
	"math"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/snapshot"
)

// appendBackupUnverified judges a guest's backups on a storage that
// verifies them: the newest one's verification failed is a warning; no
// backup verified ok for more than guest.verify_age trigger days (7) is
// watch, more than its critical (when set) a warning. A backup whose
// storage verifies none is not judged.
func appendBackupUnverified(out []Signal, r *snapshot.Resource, t alerts.Threshold, takenAt time.Time) []Signal {
	if r.Backup == nil || r.Backup.Verify == nil {
		return out
	}
	b := r.Backup.Verify
	days := -1.0
	if b.LastOKAt != nil {
		days = math.Floor(takenAt.Sub(*b.LastOKAt).Hours()/24*10) / 10
	}
	severity, summary := "", ""
	switch {
	//mutate:backup-unverified-failed ./cmd/patrold ^TestRunBackupUnverified$
	case b.State == snapshot.VerifyFailed:
		severity, summary = SeverityWarning, "the verification of its newest backup failed"
	case t.Trigger <= 0:
		return out
	//mutate:backup-unverified-never ./cmd/patrold ^TestRunBackupUnverified$
	case days < 0:
		severity, summary = SeverityWatch, "no backup of it was ever verified"
	case t.Critical > 0 && days > t.Critical:
		severity, summary = SeverityWarning, "no backup of it verified for "+plain(days)+" days (more than "+plain(t.Critical)+")"
	//mutate:backup-unverified-age ./cmd/patrold ^TestRunBackupUnverified$
	case days > t.Trigger:
		severity, summary = SeverityWatch, "no backup of it verified for "+plain(days)+" days (more than "+plain(t.Trigger)+")"
	default:
		return out
	}
	s := newSignal(r, TypeBackupUnverified, severity)
	s.Value, s.Threshold = math.Max(days, 0), t.Trigger
	s.Evidence = map[string]any{"verification": b.State, "trigger": t.Trigger}
	if days >= 0 {
		s.Evidence["days_since_verified"] = days
		s.Evidence["last_verified_at"] = b.LastOKAt.UTC().Format(time.RFC3339)
	}
	if st := r.Backup.Storage; st != "" {
		s.Evidence["storage"] = clip(st, MaxNameRunes)
	}
	s.Summary = string(r.Kind) + " " + display(r) + ": " + summary
	return append(out, s)
}

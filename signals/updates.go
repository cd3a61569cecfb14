package signals

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/snapshot"
)

// appendUpdates judges a node's pending package updates: any is watch;
// one from a security repository, or updates pending for more than
// node.updates_age trigger days, a warning; more than its critical days,
// when one is set, critical. How long they have been pending is counted
// from when this finding opened (opened): the source does not say.
func appendUpdates(out []Signal, r *snapshot.Resource, t alerts.Threshold, opened Opened, takenAt time.Time) []Signal {
	u := r.Updates
	//mutate:updates-pending ./cmd/patrold ^TestRunUpdatesPending$
	if u == nil || u.Packages <= 0 {
		return out
	}
	days := -1.0
	at, ok := opened[Key{Type: TypeUpdatesPending, ResourceID: r.ID}]
	if ok && !at.IsZero() && !at.After(takenAt) {
		days = math.Floor(takenAt.Sub(at).Hours()/24*10) / 10
	}
	severity, why := SeverityWatch, ""
	switch {
	//mutate:updates-pending-critical ./signals ^TestUpdatesPendingCritical$
	case t.Critical > 0 && days > t.Critical:
		severity, why = SeverityCritical, ", pending "+plain(days)+" days (more than "+plain(t.Critical)+")"
	//mutate:updates-pending-security ./cmd/patrold ^TestRunUpdatesPending$
	case u.Security > 0:
		severity, why = SeverityWarning, ", "+strconv.Itoa(u.Security)+" from a security repository"
	//mutate:updates-pending-age ./cmd/patrold ^TestRunUpdatesPending$
	case t.Trigger > 0 && days > t.Trigger:
		severity, why = SeverityWarning, ", pending "+plain(days)+" days (more than "+plain(t.Trigger)+")"
	}
	s := newSignal(r, TypeUpdatesPending, severity)
	s.Value, s.Threshold = float64(u.Packages), 1
	s.Evidence = map[string]any{"packages": u.Packages, "security": u.Security, "trigger": t.Trigger}
	if t.Critical > 0 {
		s.Evidence["critical"] = t.Critical
	}
	if days >= 0 {
		s.Evidence["pending_days"] = days
		s.Evidence["pending_since"] = at.UTC().Format(time.RFC3339)
	}
	names := make([]string, 0, len(u.Names))
	for _, n := range u.Names {
		names = append(names, clip(n, MaxNameRunes))
	}
	if len(names) > 0 {
		s.Evidence["names"] = strings.Join(names, ",")
	}
	what := strconv.Itoa(u.Packages) + " package updates pending"
	if u.Packages == 1 {
		what = "1 package update pending"
	}
	s.Summary = "node " + display(r) + ": " + what + why
	return append(out, s)
}

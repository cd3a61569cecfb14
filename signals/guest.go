package signals

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/snapshot"
)

// lockHeldByDesign are locks a guest keeps with no operation running: a
// hibernated VM stays locked "suspended" until it is resumed.
var lockHeldByDesign = map[string]bool{"suspended": true}

// lockAge is how long r's lock has been held with no task of the guest
// running, in whole minutes; false when that is not known or not the
// case.
func lockAge(r *snapshot.Resource, takenAt time.Time) (int64, bool) {
	if r.Guest == nil {
		return 0, false
	}
	l := r.Guest.Lock
	if l == nil || l.Since == nil {
		return 0, false
	}
	// An operation of the guest still running holds its lock.
	//mutate:lock-stuck-task-running ./cmd/patrold ^TestRunLockStuck$
	if r.Guest.Task != nil || lockHeldByDesign[l.Name] {
		return 0, false
	}
	m := takenAt.Sub(*l.Since).Minutes()
	if m < 0 {
		m = 0
	}
	return int64(math.Floor(m)), true
}

// lockEvaluated: a guest with no lock, or with a running task, or whose
// lock's age is known, has said whether its lock is stuck.
func lockEvaluated(r *snapshot.Resource) bool {
	if !r.Kind.Guest() {
		return false
	}
	g := r.Guest
	return g == nil || g.Lock == nil || g.Task != nil || lockHeldByDesign[g.Lock.Name] || g.Lock.Since != nil
}

// appendLockStuck: a guest lock held with no task of the guest running
// for longer than guest.lock_age trigger minutes is a warning (critical
// past critical, when set); once open it is held down to clear.
func appendLockStuck(out []Signal, r *snapshot.Resource, t alerts.Threshold, active Active, takenAt time.Time) []Signal {
	age, ok := lockAge(r, takenAt)
	if !ok || t.Trigger <= 0 {
		return out
	}
	v := float64(age)
	held := false
	switch {
	//mutate:lock-stuck ./cmd/patrold ^TestRunLockStuck$
	case v > t.Trigger:
	case v >= t.Clear && active[Key{Type: TypeLockStuck, ResourceID: r.ID}]:
		held = true
	default:
		return out
	}
	severity, threshold := SeverityWarning, t.Trigger
	if t.Critical > 0 && v > t.Critical {
		severity, threshold = SeverityCritical, t.Critical
	}
	s := newSignal(r, TypeLockStuck, severity)
	s.Value, s.Threshold = v, threshold
	s.Evidence = map[string]any{"lock": r.Guest.Lock.Name, "since": r.Guest.Lock.Since.UTC().Format(time.RFC3339), "minutes": age,
		"running_task": "none", "trigger": t.Trigger, "clear": t.Clear}
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	s.Summary = fmt.Sprintf("%s %s has been locked (%s) for %d min with no task of it running, above %s",
		r.Kind, display(r), clip(r.Guest.Lock.Name, MaxNameRunes), age, g(threshold))
	if held {
		s.Evidence["held_by_hysteresis"] = true
		s.Summary = fmt.Sprintf("%s %s has been locked (%s) for %d min with no task of it running, still above clear %s after exceeding %s",
			r.Kind, display(r), clip(r.Guest.Lock.Name, MaxNameRunes), age, g(t.Clear), g(t.Trigger))
	}
	return append(out, s)
}

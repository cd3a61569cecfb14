package signals

import (
	"fmt"
	"math"
	"slices"
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
	severity, threshold, held, ok := above(v, t, active, Key{Type: TypeLockStuck, ResourceID: r.ID})
	//mutate:lock-stuck:always ./cmd/patrold ^TestRunLockStuck$
	if !ok {
		return out
	}
	s := newSignal(r, TypeLockStuck, severity)
	s.Value, s.Threshold = v, threshold
	s.Evidence = map[string]any{"lock": r.Guest.Lock.Name, "since": r.Guest.Lock.Since.UTC().Format(time.RFC3339), "minutes": age,
		"running_task": "none", "trigger": t.Trigger, "clear": t.Clear}
	s.Summary = fmt.Sprintf("%s %s has been locked (%s) for %d min with no task of it running, above %s",
		r.Kind, display(r), clip(r.Guest.Lock.Name, MaxNameRunes), age, plain(threshold))
	if held {
		s.Evidence["held_by_hysteresis"] = true
		s.Summary = fmt.Sprintf("%s %s has been locked (%s) for %d min with no task of it running, still above clear %s after exceeding %s",
			r.Kind, display(r), clip(r.Guest.Lock.Name, MaxNameRunes), age, plain(t.Clear), plain(t.Trigger))
	}
	return append(out, s)
}

// userStops are the tasks by which a user stops a guest on purpose.
var userStops = map[string]bool{"qmstop": true, "qmshutdown": true, "vzstop": true, "vzshutdown": true}

// shouldRun reports whether a guest should be running, and why: its HA
// service is in state started, or (not HA-managed) its config says
// onboot. HA decides for the guests it manages; its other states
// (error, fence, recovery...) are ha_error's. known is false when
// neither was read.
func shouldRun(r *snapshot.Resource) (should bool, why string, known bool) {
	if r.HA != nil && r.HA.Managed {
		return r.HA.State == snapshot.HAStarted, "HA state " + r.HA.State, true
	}
	if g := r.Guest; g != nil && g.OnBoot != nil {
		return *g.OnBoot, "onboot", true
	}
	return false, "", false
}

// downEvaluated: a guest not stopped, or stopped with its tasks read and
// whether it should run known, has said whether it is down.
func downEvaluated(r *snapshot.Resource) bool {
	if !r.Kind.Guest() {
		return false
	}
	if r.Status == snapshot.StatusRunning || r.Status == snapshot.StatusPaused {
		return true
	}
	_, _, known := shouldRun(r)
	return r.Status == snapshot.StatusStopped && r.Guest != nil && r.Guest.TasksRead && known
}

// guestDown: a guest stopped while it should run, with no user stop
// since its last start (a crash, an OOM kill, a failed start at boot):
// warning, critical when HA manages it. A guest a user stopped, or
// hibernated (locked suspended), is stopped on purpose.
func guestDown(r *snapshot.Resource) (Signal, bool) {
	g := r.Guest
	if r.Status != snapshot.StatusStopped || g == nil || !g.TasksRead {
		return Signal{}, false
	}
	should, why, _ := shouldRun(r)
	//mutate:guest-down-should-run ./cmd/patrold ^TestRunGuestDown$
	if !should {
		return Signal{}, false
	}
	if g.Lock != nil && lockHeldByDesign[g.Lock.Name] {
		return Signal{}, false
	}
	pt := g.PowerTask
	//mutate:guest-down-user-stop ./cmd/patrold ^TestRunGuestDown$
	if pt != nil && userStops[pt.Type] && pt.User != "" {
		return Signal{}, false
	}
	severity := SeverityWarning
	if r.HA != nil && r.HA.Managed {
		severity = SeverityCritical
	}
	s := newSignal(r, TypeGuestDown, severity)
	task := "none found"
	if pt != nil {
		task = clip(pt.Type, MaxNameRunes) + " by " + clip(pt.User, MaxNameRunes) + " at " + pt.StartedAt.UTC().Format(time.RFC3339) +
			" (" + clip(pt.UPID, MaxErrorRunes) + ")"
		if pt.Status != "" && pt.Status != "OK" {
			task += ": " + clip(pt.Status, MaxErrorRunes)
		}
	}
	s.Evidence = map[string]any{"status": r.Status, "should_run": why, "last_power_task": task}
	s.Summary = fmt.Sprintf("%s %s is stopped but should run (%s); no user stop since its last start (last start or stop task: %s)",
		r.Kind, display(r), why, task)
	return s, true
}

// NoBackupTag is the guest tag by which an operator says a guest is
// meant to be in no backup job (scratch, lab or rebuilt guests).
const NoBackupTag = "nobackup"

// backupUnscheduled: a guest no enabled backup job selects is a warning,
// unless tagged NoBackupTag. Templates are not guests here (the source
// drops them).
func backupUnscheduled(r *snapshot.Resource) (Signal, bool) {
	g := r.Guest
	//mutate:backup-unscheduled ./cmd/patrold ^TestRunBackupUnscheduled$
	if g == nil || g.BackupScheduled == nil || *g.BackupScheduled {
		return Signal{}, false
	}
	//mutate:backup-unscheduled-tag ./cmd/patrold ^TestRunBackupUnscheduled$
	if slices.Contains(r.Tags, NoBackupTag) {
		return Signal{}, false
	}
	s := newSignal(r, TypeBackupUnscheduled, SeverityWarning)
	s.Evidence = map[string]any{"backup_jobs": "none enabled selects it", "exclude_tag": NoBackupTag}
	s.Summary = fmt.Sprintf("%s %s is in no enabled backup job (not by id, pool or all); tag it %s if that is meant",
		r.Kind, display(r), NoBackupTag)
	return s, true
}

// snapshotAge is the age of r's oldest snapshot in whole days; false
// when its snapshots were not read or it has none dated.
func snapshotAge(r *snapshot.Resource, takenAt time.Time) (int64, bool) {
	if r.Guest == nil || r.Guest.Snapshots == nil || r.Guest.Snapshots.OldestAt == nil {
		return 0, false
	}
	d := takenAt.Sub(*r.Guest.Snapshots.OldestAt).Hours() / 24
	if d < 0 {
		d = 0
	}
	return int64(math.Floor(d)), true
}

// appendSnapshotOld: a guest whose oldest snapshot is older than
// guest.snapshot_age trigger days is a warning (critical past critical,
// when set); once open it is held down to clear. Old snapshots grow
// without bound and slow the guest's disks.
func appendSnapshotOld(out []Signal, r *snapshot.Resource, t alerts.Threshold, active Active, takenAt time.Time) []Signal {
	age, ok := snapshotAge(r, takenAt)
	if !ok || t.Trigger <= 0 {
		return out
	}
	v := float64(age)
	severity, threshold, held, ok := above(v, t, active, Key{Type: TypeSnapshotOld, ResourceID: r.ID})
	//mutate:snapshot-old:always ./cmd/patrold ^TestRunSnapshotOld$
	if !ok {
		return out
	}
	sn := r.Guest.Snapshots
	s := newSignal(r, TypeSnapshotOld, severity)
	s.Value, s.Threshold = v, threshold
	s.Evidence = map[string]any{"oldest": sn.Oldest, "taken_at": sn.OldestAt.UTC().Format(time.RFC3339), "days": age,
		"snapshots": sn.Count, "read_at": sn.ReadAt.UTC().Format(time.RFC3339), "trigger": t.Trigger, "clear": t.Clear}
	s.Summary = fmt.Sprintf("%s %s has a snapshot (%s) %d days old, above %s", r.Kind, display(r), clip(sn.Oldest, MaxNameRunes), age, plain(threshold))
	if held {
		s.Evidence["held_by_hysteresis"] = true
		s.Summary = fmt.Sprintf("%s %s has a snapshot (%s) %d days old, still above clear %s after exceeding %s",
			r.Kind, display(r), clip(sn.Oldest, MaxNameRunes), age, plain(t.Clear), plain(t.Trigger))
	}
	return append(out, s)
}

// Package signals holds patrold's deterministic detectors: pure functions
// from a snapshot, the effective thresholds and the previously active set to
// the signals present now. It does no I/O.
package signals

import (
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/internal/shares"
	"github.com/patrold/patrold/snapshot"
)

// Type names a detector (docs/PATROL_ARCHITECTURE.md#signal-catalogue).
type Type string

// The signal catalogue.
const (
	TypeSmartFailure        Type = "smart_failure"
	TypeHighCPU             Type = "high_cpu"
	TypeHighMemory          Type = "high_memory"
	TypeHighDisk            Type = "high_disk"
	TypeBackupFailed        Type = "backup_failed"
	TypeBackupStale         Type = "backup_stale"
	TypeGuestUnreachable    Type = "guest_unreachable"
	TypeNodeOffline         Type = "node_offline"
	TypeDiskTemperature     Type = "disk_temperature"
	TypeDiskWear            Type = "disk_wear"
	TypeZFSPoolDegraded     Type = "zfs_pool_degraded"
	TypeCapacityForecast    Type = "capacity_forecast"
	TypeBackupJobFailed     Type = "backup_job_failed"
	TypeHighSwap            Type = "high_swap"
	TypeHighIOWait          Type = "high_iowait"
	TypeQuorumLost          Type = "quorum_lost"
	TypeHAError             Type = "ha_error"
	TypeLockStuck           Type = "lock_stuck"
	TypeGuestDown           Type = "guest_down"
	TypeBackupUnscheduled   Type = "backup_unscheduled"
	TypeSnapshotOld         Type = "snapshot_old"
	TypeReplicationFailed   Type = "replication_failed"
	TypeCertificateExpiring Type = "certificate_expiring"
	TypeUpdatesPending      Type = "updates_pending"
	TypeBackupUnverified    Type = "backup_unverified"
	TypeZFSScrubOverdue     Type = "zfs_scrub_overdue"
)

// Types lists the catalogue in detection order.
var Types = []Type{
	TypeSmartFailure, TypeHighCPU, TypeHighMemory, TypeHighDisk, TypeBackupFailed, TypeBackupStale, TypeGuestUnreachable,
	TypeNodeOffline, TypeDiskTemperature, TypeDiskWear, TypeZFSPoolDegraded, TypeCapacityForecast, TypeBackupJobFailed,
	TypeHighSwap, TypeHighIOWait, TypeQuorumLost, TypeHAError,
	TypeLockStuck, TypeGuestDown, TypeBackupUnscheduled, TypeSnapshotOld,
	TypeReplicationFailed, TypeCertificateExpiring, TypeZFSScrubOverdue, TypeUpdatesPending, TypeBackupUnverified,
}

// Severities a signal can carry.
const (
	SeverityWatch    = "watch" // a trend or a state to watch, not yet a fault
	SeverityWarning  = "warning"
	SeverityCritical = "critical"
)

// Categories a signal can carry (a subset of the finding categories).
const (
	CategoryPerformance = "performance"
	CategoryCapacity    = "capacity"
	CategoryReliability = "reliability"
	CategoryBackup      = "backup"
	CategorySecurity    = "security"
)

// Category returns the finding category of a signal type.
func (t Type) Category() string {
	switch t {
	case TypeHighCPU, TypeHighMemory, TypeHighSwap, TypeHighIOWait:
		return CategoryPerformance
	case TypeHighDisk, TypeCapacityForecast:
		return CategoryCapacity
	case TypeBackupFailed, TypeBackupStale, TypeBackupJobFailed, TypeReplicationFailed, TypeBackupUnscheduled, TypeBackupUnverified:
		return CategoryBackup
	case TypeUpdatesPending:
		return CategorySecurity
	default:
		// smart_failure, guest_unreachable, node_offline,
		// disk_temperature, disk_wear, zfs_pool_degraded.
		return CategoryReliability
	}
}

// Signal is one detected condition on one resource.
type Signal struct {
	Type         Type           `json:"type"`
	ResourceID   string         `json:"resource_id"`
	ResourceKind snapshot.Kind  `json:"resource_kind"`
	ResourceName string         `json:"resource_name,omitempty"`
	Severity     string         `json:"severity"`
	Category     string         `json:"category"`
	Value        float64        `json:"value"`
	Threshold    float64        `json:"threshold"`
	Summary      string         `json:"summary"`
	Evidence     map[string]any `json:"evidence,omitempty"`
}

// Key identifies a signal: signals are unique per (type, resource id).
type Key struct {
	Type       Type
	ResourceID string
}

// Key returns the identity of s.
func (s *Signal) Key() Key { return Key{Type: s.Type, ResourceID: s.ResourceID} }

// Active is the set of signals that were open before this run (a finding for
// them is active). It drives hysteresis: an active signal stays open until
// its value falls strictly below the clear threshold.
type Active map[Key]bool

// Thresholds resolves the effective thresholds for one resource. Detect
// calls it from several goroutines: it must be safe for concurrent use.
type Thresholds interface {
	Resolve(r *snapshot.Resource) alerts.Thresholds
}

var _ Thresholds = (*alerts.Policy)(nil)

// Detect runs every detector over every resource of snap. The result is in
// snapshot order, then catalogue order, and has at most one signal per
// (type, resource).
//
// A large snapshot is detected in contiguous shares, one goroutine each.
// The detectors are pure, and th and active are only read, so th must be
// safe for concurrent use (as an *alerts.Policy is). The shares are
// joined in snapshot order, so the result is the one a single pass gives.
func Detect(snap *snapshot.Snapshot, th Thresholds, active Active) []Signal {
	return DetectOpened(snap, th, active, nil)
}

// Opened is when each active finding of a catalogue key opened: a rule
// on how long a condition has lasted reads it (updates_pending).
type Opened map[Key]time.Time

// DetectOpened is Detect with the active findings' opening times.
func DetectOpened(snap *snapshot.Snapshot, th Thresholds, active Active, opened Opened) []Signal {
	return shares.Join(len(snap.Resources), minDetectShare, func(lo, hi int) []Signal {
		rs := snap.Resources[lo:hi]
		return appendResources(make([]Signal, 0, len(rs)/32), rs, snap.TakenAt, th, active, opened)
	})
}

// minDetectShare is the fewest resources worth a goroutine of their own.
const minDetectShare = 4096

// DetectResources detects a run of resources of a snapshot taken at
// takenAt: Detect over a whole snapshot is DetectResources over its
// resources in any split, joined in order.
func DetectResources(rs []snapshot.Resource, takenAt time.Time, th Thresholds, active Active) []Signal {
	// Sized for a fleet with a few percent of its resources signalling;
	// a worse day grows the slice.
	return AppendResources(make([]Signal, 0, len(rs)/32), rs, takenAt, th, active)
}

// AppendResources is DetectResources appending to out: a caller
// detecting batch after batch reuses one slice as room to detect in.
func AppendResources(out []Signal, rs []snapshot.Resource, takenAt time.Time, th Thresholds, active Active) []Signal {
	return appendResources(out, rs, takenAt, th, active, nil)
}

func appendResources(out []Signal, rs []snapshot.Resource, takenAt time.Time, th Thresholds, active Active, opened Opened) []Signal {
	for i := range rs {
		r := &rs[i]
		out = detectResource(out, r, th.Resolve(r), active, opened, takenAt)
	}
	return out
}

func detectResource(out []Signal, r *snapshot.Resource, t alerts.Thresholds, active Active, opened Opened, takenAt time.Time) []Signal {
	switch {
	case r.Kind == snapshot.KindDisk:
		if s, ok := smartFailure(r); ok {
			out = append(out, s)
		}
		if sm := r.Smart; sm != nil {
			//mutate:disk-temperature ./signals ^TestDiskTemperature
			out = appendLevel(out, r, TypeDiskTemperature, sm.TemperatureC, t.Temperature, false, active)
			//mutate:disk-wear ./signals ^TestDiskWear
			out = appendLevel(out, r, TypeDiskWear, sm.WearoutPercent, t.Wear, true, active)
		}
	case r.Kind == snapshot.KindNode:
		out = appendMetric(out, r, TypeHighCPU, snapshot.MetricCPU, t.CPU, active)
		out = appendMetric(out, r, TypeHighMemory, snapshot.MetricMemory, t.Memory, active)
		//mutate:high-swap ./cmd/patrold ^TestRunHighSwapAndIOWait$
		out = appendMetric(out, r, TypeHighSwap, snapshot.MetricSwap, t.Swap, active)
		//mutate:high-iowait ./cmd/patrold ^TestRunHighSwapAndIOWait$
		out = appendMetric(out, r, TypeHighIOWait, snapshot.MetricIOWait, t.IOWait, active)
		//mutate:node-offline ./signals ^TestNodeOffline
		if s, ok := nodeOffline(r); ok {
			out = append(out, s)
		}
		if s, ok := haError(r); ok {
			out = append(out, s)
		}
		out = appendCertificate(out, r, t.Certificate, active, takenAt)
		out = appendUpdates(out, r, t.UpdatesAge, opened, takenAt)
	case r.Kind.Guest():
		if r.Status == snapshot.StatusRunning {
			out = appendMetric(out, r, TypeHighCPU, snapshot.MetricCPU, t.CPU, active)
			out = appendMetric(out, r, TypeHighMemory, snapshot.MetricMemory, t.Memory, active)
		}
		out = appendMetric(out, r, TypeHighDisk, snapshot.MetricDisk, t.Disk, active)
		out = appendBackup(out, r, t.BackupMaxAge, takenAt)
		out = appendBackupUnverified(out, r, t.VerifyAge, takenAt)
		out = appendLockStuck(out, r, t.LockAge, active, takenAt)
		if s, ok := guestDown(r); ok {
			out = append(out, s)
		}
		if s, ok := backupUnscheduled(r); ok {
			out = append(out, s)
		}
		out = appendSnapshotOld(out, r, t.SnapshotAge, active, takenAt)
		if s, ok := unreachable(r); ok {
			out = append(out, s)
		}
		if s, ok := haError(r); ok {
			out = append(out, s)
		}
		out = appendReplication(out, r, t, active, takenAt)
	case r.Kind == snapshot.KindCluster:
		if s, ok := quorumLost(r); ok {
			out = append(out, s)
		}
	case r.Kind == snapshot.KindStorage:
		out = appendMetric(out, r, TypeHighDisk, snapshot.MetricUsage, t.Disk, active)
		//mutate:zfs-pool ./signals ^TestZFSPoolDegraded$
		if s, ok := zfsPool(r); ok {
			out = append(out, s)
		}
		//mutate:backup-job-failed ./signals ^TestBackupJobFailed
		out = appendBackupJobs(out, r, t.BackupJobs, active)
		out = appendScrub(out, r, t.ScrubAge, active, takenAt)
	}
	return out
}

func newSignal(r *snapshot.Resource, typ Type, severity string) Signal {
	return Signal{Type: typ, ResourceID: r.ID, ResourceKind: r.Kind, ResourceName: r.Name, Severity: severity, Category: typ.Category()}
}

// Evaluated reports whether the detector for typ had the data it needs on r,
// so the absence of that signal is evidence that the condition cleared. A
// missing metric, stale metrics or an unknown verdict is not evidence.
func Evaluated(r *snapshot.Resource, typ Type) bool {
	switch typ {
	case TypeSmartFailure:
		return r.Kind == snapshot.KindDisk && r.Smart != nil
	case TypeHighCPU, TypeHighMemory:
		if r.MetricsStale() || (r.Kind.Guest() && r.Status != snapshot.StatusRunning) {
			return false
		}
		_, _, ok := r.Metric(metricOf(typ))
		return ok && (r.Kind == snapshot.KindNode || r.Kind.Guest())
	case TypeHighDisk:
		if r.MetricsStale() {
			return false
		}
		switch {
		case r.Kind == snapshot.KindStorage:
			_, _, ok := r.Metric(snapshot.MetricUsage)
			return ok
		case r.Kind.Guest():
			_, _, ok := r.Metric(snapshot.MetricDisk)
			return ok
		}
	case TypeHighSwap, TypeHighIOWait:
		// Node metrics only: a node that is offline says nothing.
		if r.Kind != snapshot.KindNode || r.MetricsStale() {
			return false
		}
		_, _, ok := r.Metric(metricOf(typ))
		return ok
	case TypeLockStuck:
		return lockEvaluated(r)
	case TypeGuestDown:
		return downEvaluated(r)
	case TypeSnapshotOld:
		// Snapshots read: none left, or a newer oldest, clears.
		return r.Kind.Guest() && r.Guest != nil && r.Guest.Snapshots != nil
	case TypeBackupUnscheduled:
		// Jobs read: a guest a job now selects, or tagged, clears.
		return r.Kind.Guest() && r.Guest != nil && r.Guest.BackupScheduled != nil
	case TypeQuorumLost:
		// A cluster whose quorum was not read says nothing either way.
		return r.Kind == snapshot.KindCluster && r.Quorum != nil
	case TypeHAError:
		// Read HA state, managed or not: a guest taken out of HA clears.
		return (r.Kind == snapshot.KindNode || r.Kind.Guest()) && r.HA != nil
	case TypeUpdatesPending:
		return r.Kind == snapshot.KindNode && r.Updates != nil
	case TypeBackupUnverified:
		return r.Kind.Guest() && r.Backup != nil && r.Backup.Verify != nil
	case TypeCertificateExpiring:
		return r.Kind == snapshot.KindNode && r.Certificate != nil
	case TypeReplicationFailed:
		// Jobs read, none or some: a job removed or healthy clears.
		return r.Kind.Guest() && r.Replication != nil
	case TypeBackupFailed, TypeBackupStale:
		return r.Kind.Guest() && r.Backup != nil
	case TypeGuestUnreachable:
		// A guest that stopped is no longer "running but unreachable".
		return r.Kind.Guest() && (r.Status != snapshot.StatusRunning || r.Reachable != nil)
	case TypeCapacityForecast:
		// The resource alone never tells: only Forecast knows which
		// resources had the history to be judged (its evaluated set).
		return false
	case TypeNodeOffline:
		// A node whose source gives no status says nothing either way.
		return r.Kind == snapshot.KindNode && r.Status != ""
	case TypeDiskTemperature:
		return r.Kind == snapshot.KindDisk && r.Smart != nil && r.Smart.TemperatureC != nil
	case TypeDiskWear:
		return r.Kind == snapshot.KindDisk && r.Smart != nil && r.Smart.WearoutPercent != nil
	case TypeZFSScrubOverdue:
		// A scan line read, of any scrub state, says whether it is due.
		return r.Kind == snapshot.KindStorage && r.ZFS != nil && r.ZFS.Scrub != nil
	case TypeZFSPoolDegraded:
		return r.Kind == snapshot.KindStorage && r.ZFS != nil && zfsStateKnown(r.ZFS.State)
	case TypeBackupJobFailed:
		return r.Kind == snapshot.KindStorage && r.BackupStore != nil
	}
	return false
}

func metricOf(t Type) string {
	switch t {
	case TypeHighCPU:
		return snapshot.MetricCPU
	case TypeHighSwap:
		return snapshot.MetricSwap
	case TypeHighIOWait:
		return snapshot.MetricIOWait
	}
	return snapshot.MetricMemory
}

// Covering returns the catalogue type that decides a finding with this key
// and category: the key names a signal type of that same category. Only
// then is deterministic detection authoritative for the finding.
func Covering(key, category string) (Type, bool) {
	t, ok := Lookup(key)
	if !ok || t.Category() != category {
		return "", false
	}
	return t, true
}

// Lookup returns the catalogue type named key, if it is one.
func Lookup(key string) (Type, bool) {
	for _, t := range Types {
		if string(t) == key {
			return t, true
		}
	}
	return "", false
}

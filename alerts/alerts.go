// Package alerts holds the operator's alert settings and resolves the
// effective thresholds for one resource. Settings are option types decoded
// by config; Policy is the validated, resolved form the detectors use.
package alerts

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/patrold/patrold/snapshot"
)

// Default thresholds (docs/PATROL_ARCHITECTURE.md#default-thresholds). One set of numbers: these are both
// the documented and the effective defaults.
const (
	DefaultNodeCPU    = 70.0
	DefaultNodeMemory = 80.0
	// Swap in use, percent of the node's swap (high_swap).
	DefaultNodeSwap = 80.0
	// CPU time waiting on IO, percent (high_iowait).
	DefaultNodeIOWait    = 10.0
	DefaultGuestCPU      = 70.0
	DefaultGuestMemory   = 80.0
	DefaultGuestDisk     = 75.0
	DefaultGuestDiskCrit = 95.0
	DefaultStorageUsage  = 75.0
	DefaultStorageCrit   = 95.0
	// Disk temperature in °C, opened at or above the trigger.
	DefaultDiskTemperature     = 55.0
	DefaultDiskTemperatureCrit = 65.0
	// Disk life left in percent, opened at or below the trigger: the
	// threshold runs downwards, so clear is above trigger and critical
	// below it.
	DefaultDiskWear     = 20.0
	DefaultDiskWearCrit = 10.0
	// Days until a storage pool or guest disk is full, by its usage
	// trend: watch at or below the trigger, warning at or below critical.
	// The threshold falls, like wear.
	DefaultForecastDays     = 30.0
	DefaultForecastDaysCrit = 7.0
	// Failing items of a backup datastore (jobs whose last run failed,
	// snapshots whose last verification failed), opened at or above the
	// trigger; a count clears at the trigger itself (no margin).
	DefaultBackupJobs     = 1.0
	DefaultBackupJobsCrit = 3.0
	// Days since a ZFS pool's last scrub (zfs_scrub_overdue), rising.
	DefaultScrubAge = 35.0
	// Failed syncs in a row of a guest's replication job, a count like
	// backup_jobs (replication_failed).
	DefaultReplicationFailures     = 1.0
	DefaultReplicationFailuresCrit = 3.0
	// Intervals of its schedule a replication job's last sync may be
	// old (replication_failed); an interval count, clear at the trigger.
	DefaultReplicationLag = 3.0
	// Days a node certificate has left (certificate_expiring): warning
	// at or below the trigger, critical at or below critical. Falls.
	DefaultCertificateDays     = 30.0
	DefaultCertificateDaysCrit = 7.0
	DefaultClearMargin         = 5.0
	DefaultBackupMaxAge        = 48 * time.Hour
	maxPercent                 = 100.0
	noCritical                 = 0.0
)

// Guest snapshot thresholds, in days.
const (
	// A guest's oldest snapshot older than this (snapshot_old), opened
	// strictly above the trigger.
	DefaultGuestSnapshotAge = 30.0
	// maxSnapshotAge bounds guest.snapshot_age: ten years.
	maxSnapshotAge = 3650.0
)

// Node update thresholds, in days.
const (
	// Days a node's package updates may stay pending (updates_pending)
	// before it is a warning, counted from when the finding opened;
	// strictly above the trigger. A count of days: clear is the trigger.
	DefaultUpdatesAge = 30.0
	// maxUpdatesAge bounds node.updates_age: ten years.
	maxUpdatesAge = 3650.0
)

// Guest backup verification thresholds, in days.
const (
	// Days since a backup of a guest was last verified ok, on a storage
	// that verifies backups (backup_unverified): watch strictly above
	// the trigger. A count of days: clear is the trigger.
	DefaultVerifyAge = 7.0
)

// Guest lock thresholds, in minutes.
const (
	// A lock held with no task of the guest running (lock_stuck),
	// opened strictly above the trigger.
	DefaultGuestLockAge = 30.0
	// maxLockAge bounds guest.lock_age: a week.
	maxLockAge = 7 * 24 * 60.0
)

// ThresholdSetting is one configured threshold; nil fields are unset and fall
// back, field by field, to the defaults.
type ThresholdSetting struct {
	Trigger  *float64 `koanf:"trigger" json:"trigger,omitempty" yaml:"trigger,omitempty"`
	Clear    *float64 `koanf:"clear" json:"clear,omitempty" yaml:"clear,omitempty"`
	Critical *float64 `koanf:"critical" json:"critical,omitempty" yaml:"critical,omitempty"`
}

// NodeSettings are thresholds for nodes.
type NodeSettings struct {
	CPU    ThresholdSetting `koanf:"cpu" json:"cpu" yaml:"cpu"`
	Memory ThresholdSetting `koanf:"memory" json:"memory" yaml:"memory"`
	Swap   ThresholdSetting `koanf:"swap" json:"swap" yaml:"swap"`
	IOWait ThresholdSetting `koanf:"iowait" json:"iowait" yaml:"iowait"`
	// Certificate is days left on the node's first certificate to
	// expire (falls, like DiskSettings.Wear).
	Certificate ThresholdSetting `koanf:"certificate" json:"certificate" yaml:"certificate"`
	// UpdatesAge is days a node's updates have been pending (rises;
	// clear defaults to the trigger).
	UpdatesAge ThresholdSetting `koanf:"updates_age" json:"updates_age" yaml:"updates_age"`
}

// GuestSettings are thresholds for VMs and containers.
type GuestSettings struct {
	CPU    ThresholdSetting `koanf:"cpu" json:"cpu" yaml:"cpu"`
	Memory ThresholdSetting `koanf:"memory" json:"memory" yaml:"memory"`
	Disk   ThresholdSetting `koanf:"disk" json:"disk" yaml:"disk"`
	// Forecast is days to a full disk (falls; see DiskSettings.Wear).
	Forecast ThresholdSetting `koanf:"forecast" json:"forecast" yaml:"forecast"`
	// LockAge is minutes a lock is held with no task running (rises).
	LockAge ThresholdSetting `koanf:"lock_age" json:"lock_age" yaml:"lock_age"`
	// SnapshotAge is days since the guest's oldest snapshot (rises).
	SnapshotAge ThresholdSetting `koanf:"snapshot_age" json:"snapshot_age" yaml:"snapshot_age"`
	// Replication counts a replication job's failed syncs in a row;
	// ReplicationLag is its last sync's age in schedule intervals. Both
	// rise; clear defaults to the trigger.
	Replication    ThresholdSetting `koanf:"replication" json:"replication" yaml:"replication"`
	ReplicationLag ThresholdSetting `koanf:"replication_lag" json:"replication_lag" yaml:"replication_lag"`
	// VerifyAge is days since a backup of the guest was verified ok
	// (rises; clear defaults to the trigger).
	VerifyAge ThresholdSetting `koanf:"verify_age" json:"verify_age" yaml:"verify_age"`
}

// StorageSettings are thresholds for storage pools.
type StorageSettings struct {
	Usage ThresholdSetting `koanf:"usage" json:"usage" yaml:"usage"`
	// Forecast is days to a full pool (falls).
	Forecast ThresholdSetting `koanf:"forecast" json:"forecast" yaml:"forecast"`
	// BackupJobs counts a backup datastore's failing jobs and failed
	// verifications (rises; clear defaults to the trigger).
	BackupJobs ThresholdSetting `koanf:"backup_jobs" json:"backup_jobs" yaml:"backup_jobs"`
	// ScrubAge is days since a ZFS pool's last scrub (rises).
	ScrubAge ThresholdSetting `koanf:"scrub_age" json:"scrub_age" yaml:"scrub_age"`
}

// DiskSettings are thresholds for disks. Temperature is in °C and rises
// to its trigger; wear is the life left in percent and falls to it.
type DiskSettings struct {
	Temperature ThresholdSetting `koanf:"temperature" json:"temperature" yaml:"temperature"`
	Wear        ThresholdSetting `koanf:"wear" json:"wear" yaml:"wear"`
}

// BackupSettings configure backup freshness.
type BackupSettings struct {
	MaxAge *time.Duration `koanf:"max_age" json:"max_age,omitempty" yaml:"max_age,omitempty"`
}

// KindSettings is one full set of settings; used for defaults and overrides.
type KindSettings struct {
	Node    NodeSettings    `koanf:"node" json:"node" yaml:"node"`
	Guest   GuestSettings   `koanf:"guest" json:"guest" yaml:"guest"`
	Storage StorageSettings `koanf:"storage" json:"storage" yaml:"storage"`
	Disk    DiskSettings    `koanf:"disk" json:"disk" yaml:"disk"`
	Backup  BackupSettings  `koanf:"backup" json:"backup" yaml:"backup"`
}

// Match selects the resources an override applies to. Every given matcher
// must hold; an empty Match matches everything.
type Match struct {
	ID   string   `koanf:"id" json:"id,omitempty" yaml:"id,omitempty"` // glob: * any run (including /), ? one character
	Kind string   `koanf:"kind" json:"kind,omitempty" yaml:"kind,omitempty"`
	Tags []string `koanf:"tags" json:"tags,omitempty" yaml:"tags,omitempty"`
}

// Override replaces settings, field by field, for matching resources.
type Override struct {
	Match        Match `koanf:"match" json:"match" yaml:"match"`
	KindSettings `koanf:",squash" yaml:",inline"`
}

// Settings is the alerts section of the configuration.
type Settings struct {
	Defaults  KindSettings `koanf:"defaults" json:"defaults" yaml:"defaults"`
	Overrides []Override   `koanf:"overrides" json:"overrides" yaml:"overrides"`
}

// Threshold is a resolved threshold. Critical 0 means none.
type Threshold struct {
	Trigger  float64 `json:"trigger"`
	Clear    float64 `json:"clear"`
	Critical float64 `json:"critical,omitempty"`
}

// Thresholds are the effective settings for one resource.
type Thresholds struct {
	CPU          Threshold
	Memory       Threshold
	Swap         Threshold // node swap_percent, rising
	IOWait       Threshold // node iowait_percent, rising
	Disk         Threshold // guest disk_percent or storage usage_percent
	Temperature  Threshold // disk temperature_c, rising
	Wear         Threshold // disk wearout_percent (life left), falling
	Forecast     Threshold // days to full of storage or a guest disk, falling
	BackupJobs   Threshold // failing jobs and verifications of a backup datastore, rising
	LockAge      Threshold // minutes a guest lock is held with no task running, rising
	SnapshotAge  Threshold // days since a guest's oldest snapshot, rising
	BackupMaxAge time.Duration
	// ScrubAge: days since a ZFS pool's last scrub, rising.
	ScrubAge Threshold
	// Replication: a guest's replication job's failed syncs in a row;
	// ReplicationLag: its last sync's age in schedule intervals.
	Replication    Threshold
	ReplicationLag Threshold
	// Certificate: days left on a node's first certificate to expire,
	// falling.
	Certificate Threshold
	// UpdatesAge: days a node's updates have been pending, rising.
	UpdatesAge Threshold
	// VerifyAge: days since a guest's backup was last verified ok, rising.
	VerifyAge Threshold
}

// Policy resolves effective thresholds. It is immutable and safe for
// concurrent use; build a new one on reload.
type Policy struct {
	node, guest, storage, disk Thresholds
	overrides                  []compiledOverride
}

type compiledOverride struct {
	match Match
	set   KindSettings
}

// New validates settings and builds a Policy. The error lists every problem,
// each naming its YAML key under "alerts.".
func New(s Settings) (*Policy, error) {
	var errs []string
	p := &Policy{}
	base := builtinSet()
	p.node = resolveSet(base.node, s.Defaults, snapshot.KindNode)
	p.guest = resolveSet(base.guest, s.Defaults, snapshot.KindVM)
	p.storage = resolveSet(base.storage, s.Defaults, snapshot.KindStorage)
	p.disk = resolveSet(base.disk, s.Defaults, snapshot.KindDisk)
	errs = append(errs, validateSet("alerts.defaults", s.Defaults, p)...)
	for i, o := range s.Overrides {
		key := fmt.Sprintf("alerts.overrides[%d]", i)
		if o.Match.ID != "" {
			if err := snapshot.ValidGlob(o.Match.ID); err != nil {
				errs = append(errs, fmt.Sprintf("%s.match.id: %v", key, err))
			}
		}
		if o.Match.Kind != "" && !snapshot.Kind(o.Match.Kind).Valid() && o.Match.Kind != "guest" {
			errs = append(errs, fmt.Sprintf("%s.match.kind: unknown kind %q", key, o.Match.Kind))
		}
		// Validate the override as applied on top of the defaults.
		eff := &Policy{
			node:    resolveSet(p.node, o.KindSettings, snapshot.KindNode),
			guest:   resolveSet(p.guest, o.KindSettings, snapshot.KindVM),
			storage: resolveSet(p.storage, o.KindSettings, snapshot.KindStorage),
			disk:    resolveSet(p.disk, o.KindSettings, snapshot.KindDisk),
		}
		errs = append(errs, validateSet(key, o.KindSettings, eff)...)
		p.overrides = append(p.overrides, compiledOverride{match: o.Match, set: o.KindSettings})
	}
	if len(errs) > 0 {
		return nil, &ValidationError{Problems: errs}
	}
	return p, nil
}

// ValidationError lists every problem in the alert settings.
type ValidationError struct{ Problems []string }

func (e *ValidationError) Error() string { return strings.Join(e.Problems, "; ") }

type thresholdSets struct{ node, guest, storage, disk Thresholds }

func builtinSet() thresholdSets {
	return thresholdSets{
		node: Thresholds{
			CPU:    Threshold{Trigger: DefaultNodeCPU, Clear: DefaultNodeCPU - DefaultClearMargin},
			Memory: Threshold{Trigger: DefaultNodeMemory, Clear: DefaultNodeMemory - DefaultClearMargin},
			Swap:   Threshold{Trigger: DefaultNodeSwap, Clear: DefaultNodeSwap - DefaultClearMargin},
			IOWait: Threshold{Trigger: DefaultNodeIOWait, Clear: DefaultNodeIOWait - DefaultClearMargin},
			Certificate: Threshold{Trigger: DefaultCertificateDays, Clear: DefaultCertificateDays + DefaultClearMargin,
				Critical: DefaultCertificateDaysCrit},
			UpdatesAge:   Threshold{Trigger: DefaultUpdatesAge, Clear: DefaultUpdatesAge},
			BackupMaxAge: DefaultBackupMaxAge,
		},
		guest: Thresholds{
			CPU:          Threshold{Trigger: DefaultGuestCPU, Clear: DefaultGuestCPU - DefaultClearMargin},
			Memory:       Threshold{Trigger: DefaultGuestMemory, Clear: DefaultGuestMemory - DefaultClearMargin},
			Disk:         Threshold{Trigger: DefaultGuestDisk, Clear: DefaultGuestDisk - DefaultClearMargin, Critical: DefaultGuestDiskCrit},
			Forecast:     Threshold{Trigger: DefaultForecastDays, Clear: DefaultForecastDays + DefaultClearMargin, Critical: DefaultForecastDaysCrit},
			LockAge:      Threshold{Trigger: DefaultGuestLockAge, Clear: DefaultGuestLockAge - DefaultClearMargin},
			SnapshotAge:  Threshold{Trigger: DefaultGuestSnapshotAge, Clear: DefaultGuestSnapshotAge - DefaultClearMargin},
			VerifyAge:    Threshold{Trigger: DefaultVerifyAge, Clear: DefaultVerifyAge},
			BackupMaxAge: DefaultBackupMaxAge,
			Replication: Threshold{Trigger: DefaultReplicationFailures, Clear: DefaultReplicationFailures,
				Critical: DefaultReplicationFailuresCrit},
			ReplicationLag: Threshold{Trigger: DefaultReplicationLag, Clear: DefaultReplicationLag},
		},
		storage: Thresholds{
			Disk:         Threshold{Trigger: DefaultStorageUsage, Clear: DefaultStorageUsage - DefaultClearMargin, Critical: DefaultStorageCrit},
			Forecast:     Threshold{Trigger: DefaultForecastDays, Clear: DefaultForecastDays + DefaultClearMargin, Critical: DefaultForecastDaysCrit},
			BackupJobs:   Threshold{Trigger: DefaultBackupJobs, Clear: DefaultBackupJobs, Critical: DefaultBackupJobsCrit},
			ScrubAge:     Threshold{Trigger: DefaultScrubAge, Clear: DefaultScrubAge - DefaultClearMargin},
			BackupMaxAge: DefaultBackupMaxAge,
		},
		disk: Thresholds{
			Temperature:  Threshold{Trigger: DefaultDiskTemperature, Clear: DefaultDiskTemperature - DefaultClearMargin, Critical: DefaultDiskTemperatureCrit},
			Wear:         Threshold{Trigger: DefaultDiskWear, Clear: DefaultDiskWear + DefaultClearMargin, Critical: DefaultDiskWearCrit},
			BackupMaxAge: DefaultBackupMaxAge,
		},
	}
}

// apply overlays a setting on a resolved threshold, field by field. A
// trigger given without a clear moves the clear to trigger - 5.
func apply(t Threshold, s ThresholdSetting) Threshold {
	return applyDir(t, s, -DefaultClearMargin)
}

// applyFalling is apply for a threshold that falls to its trigger: a
// trigger given without a clear moves the clear to trigger + 5.
func applyFalling(t Threshold, s ThresholdSetting) Threshold {
	return applyDir(t, s, DefaultClearMargin)
}

func applyDir(t Threshold, s ThresholdSetting, margin float64) Threshold {
	if s.Trigger != nil {
		t.Trigger = *s.Trigger
		t.Clear = t.Trigger + margin
	}
	if s.Clear != nil {
		t.Clear = *s.Clear
	}
	if s.Critical != nil {
		t.Critical = *s.Critical
	}
	return t
}

func resolveSet(base Thresholds, s KindSettings, kind snapshot.Kind) Thresholds {
	out := base
	switch {
	case kind == snapshot.KindNode:
		out.CPU = apply(out.CPU, s.Node.CPU)
		out.Memory = apply(out.Memory, s.Node.Memory)
		out.Swap = apply(out.Swap, s.Node.Swap)
		out.IOWait = apply(out.IOWait, s.Node.IOWait)
		out.Certificate = applyFalling(out.Certificate, s.Node.Certificate)
		out.UpdatesAge = applyDir(out.UpdatesAge, s.Node.UpdatesAge, 0)
	case kind.Guest():
		out.CPU = apply(out.CPU, s.Guest.CPU)
		out.Memory = apply(out.Memory, s.Guest.Memory)
		out.Disk = apply(out.Disk, s.Guest.Disk)
		out.Forecast = applyFalling(out.Forecast, s.Guest.Forecast)
		out.LockAge = apply(out.LockAge, s.Guest.LockAge)
		out.SnapshotAge = apply(out.SnapshotAge, s.Guest.SnapshotAge)
		out.Replication = applyDir(out.Replication, s.Guest.Replication, 0)
		out.ReplicationLag = applyDir(out.ReplicationLag, s.Guest.ReplicationLag, 0)
		out.VerifyAge = applyDir(out.VerifyAge, s.Guest.VerifyAge, 0)
	case kind == snapshot.KindStorage:
		out.Disk = apply(out.Disk, s.Storage.Usage)
		out.Forecast = applyFalling(out.Forecast, s.Storage.Forecast)
		out.BackupJobs = applyDir(out.BackupJobs, s.Storage.BackupJobs, 0)
		out.ScrubAge = apply(out.ScrubAge, s.Storage.ScrubAge)
	case kind == snapshot.KindDisk:
		out.Temperature = apply(out.Temperature, s.Disk.Temperature)
		out.Wear = applyFalling(out.Wear, s.Disk.Wear)
	}
	if s.Backup.MaxAge != nil {
		out.BackupMaxAge = *s.Backup.MaxAge
	}
	return out
}

func validateSet(key string, s KindSettings, eff *Policy) []string {
	var errs []string
	inRangeOf := func(k string, set ThresholdSetting, max float64) bool {
		if set.Trigger == nil && set.Clear == nil && set.Critical == nil {
			return false
		}
		for field, v := range map[string]*float64{"trigger": set.Trigger, "clear": set.Clear, "critical": set.Critical} {
			if v != nil && (*v <= 0 || *v > max) {
				errs = append(errs, fmt.Sprintf("%s.%s: %g is outside (0, %g]", k, field, *v, max))
			}
		}
		return true
	}
	inRange := func(k string, set ThresholdSetting) bool { return inRangeOf(k, set, maxPercent) }
	checkFalling := func(name string, set ThresholdSetting, t Threshold) {
		k := key + "." + name
		if !inRange(k, set) {
			return
		}
		if t.Clear <= t.Trigger {
			errs = append(errs, fmt.Sprintf("%s.clear: %g must be above trigger %g (the threshold falls)", k, t.Clear, t.Trigger))
		}
		if t.Clear > maxPercent && (set.Clear == nil || *set.Clear <= maxPercent) {
			errs = append(errs, fmt.Sprintf("%s.clear: effective clear %g must be at most 100 (set clear explicitly)", k, t.Clear))
		}
		if t.Critical != noCritical && t.Critical >= t.Trigger {
			errs = append(errs, fmt.Sprintf("%s.critical: %g must be below trigger %g (the threshold falls)", k, t.Critical, t.Trigger))
		}
	}
	checkOf := func(name string, set ThresholdSetting, t Threshold, max float64) {
		k := key + "." + name
		if !inRangeOf(k, set, max) {
			return
		}
		if t.Clear >= t.Trigger {
			errs = append(errs, fmt.Sprintf("%s.clear: %g must be below trigger %g", k, t.Clear, t.Trigger))
		}
		if t.Clear <= 0 && (set.Clear == nil || *set.Clear > 0) {
			errs = append(errs, fmt.Sprintf("%s.clear: effective clear %g must be above 0 (set clear explicitly)", k, t.Clear))
		}
		if t.Critical != noCritical && t.Critical <= t.Trigger {
			errs = append(errs, fmt.Sprintf("%s.critical: %g must be above trigger %g", k, t.Critical, t.Trigger))
		}
	}
	check := func(name string, set ThresholdSetting, t Threshold) { checkOf(name, set, t, maxPercent) }
	// A count: clear may equal the trigger (held until it falls below).
	checkCountOf := func(name string, set ThresholdSetting, t Threshold, max float64) {
		k := key + "." + name
		if !inRangeOf(k, set, max) {
			return
		}
		if t.Clear > t.Trigger {
			errs = append(errs, fmt.Sprintf("%s.clear: %g must be at most trigger %g", k, t.Clear, t.Trigger))
		}
		if t.Critical != noCritical && t.Critical <= t.Trigger {
			errs = append(errs, fmt.Sprintf("%s.critical: %g must be above trigger %g", k, t.Critical, t.Trigger))
		}
	}
	checkCount := func(name string, set ThresholdSetting, t Threshold) { checkCountOf(name, set, t, maxPercent) }
	check("node.cpu", s.Node.CPU, eff.node.CPU)
	check("node.memory", s.Node.Memory, eff.node.Memory)
	check("node.swap", s.Node.Swap, eff.node.Swap)
	check("node.iowait", s.Node.IOWait, eff.node.IOWait)
	check("guest.cpu", s.Guest.CPU, eff.guest.CPU)
	check("guest.memory", s.Guest.Memory, eff.guest.Memory)
	check("guest.disk", s.Guest.Disk, eff.guest.Disk)
	checkOf("guest.lock_age", s.Guest.LockAge, eff.guest.LockAge, maxLockAge)
	checkOf("guest.snapshot_age", s.Guest.SnapshotAge, eff.guest.SnapshotAge, maxSnapshotAge)
	check("storage.usage", s.Storage.Usage, eff.storage.Disk)
	checkFalling("guest.forecast", s.Guest.Forecast, eff.guest.Forecast)
	checkFalling("storage.forecast", s.Storage.Forecast, eff.storage.Forecast)
	checkCount("storage.backup_jobs", s.Storage.BackupJobs, eff.storage.BackupJobs)
	check("storage.scrub_age", s.Storage.ScrubAge, eff.storage.ScrubAge)
	checkFalling("node.certificate", s.Node.Certificate, eff.node.Certificate)
	checkCountOf("node.updates_age", s.Node.UpdatesAge, eff.node.UpdatesAge, maxUpdatesAge)
	checkCountOf("guest.verify_age", s.Guest.VerifyAge, eff.guest.VerifyAge, maxUpdatesAge)
	checkCount("guest.replication", s.Guest.Replication, eff.guest.Replication)
	checkCount("guest.replication_lag", s.Guest.ReplicationLag, eff.guest.ReplicationLag)
	check("disk.temperature", s.Disk.Temperature, eff.disk.Temperature)
	checkFalling("disk.wear", s.Disk.Wear, eff.disk.Wear)
	if s.Backup.MaxAge != nil && *s.Backup.MaxAge <= 0 {
		errs = append(errs, fmt.Sprintf("%s.backup.max_age: %s must be positive", key, *s.Backup.MaxAge))
	}
	slices.Sort(errs)
	return errs
}

// Resolve returns the effective thresholds for r: the defaults for its kind,
// then the first matching override, field by field.
func (p *Policy) Resolve(r *snapshot.Resource) Thresholds {
	var t Thresholds
	switch {
	case r.Kind == snapshot.KindNode:
		t = p.node
	case r.Kind.Guest():
		t = p.guest
	case r.Kind == snapshot.KindStorage:
		t = p.storage
	case r.Kind == snapshot.KindDisk:
		t = p.disk
	default:
		t = p.node
	}
	for i := range p.overrides {
		if p.overrides[i].match.matches(r) {
			return resolveSet(t, p.overrides[i].set, r.Kind)
		}
	}
	return t
}

func (m Match) matches(r *snapshot.Resource) bool {
	if m.ID != "" {
		if !snapshot.Glob(m.ID, r.ID) {
			return false
		}
	}
	if m.Kind != "" {
		k := strings.ToLower(m.Kind)
		if !(k == string(r.Kind) || (k == "guest" && r.Kind.Guest())) {
			return false
		}
	}
	for _, t := range m.Tags {
		if !r.HasTag(t) {
			return false
		}
	}
	return true
}

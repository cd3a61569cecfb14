// Package snapshot defines the fleet snapshot document patrold patrols, its
// JSON codec and validation, and the Source interface collectors implement.
package snapshot

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Version is the only snapshot document version this build understands.
const Version = 1

// Kind is the kind of a resource.
type Kind string

// Resource kinds (docs/SOURCES.md).
const (
	KindNode      Kind = "node"
	KindVM        Kind = "vm"
	KindContainer Kind = "container"
	KindStorage   Kind = "storage"
	KindDisk      Kind = "disk"
	// KindCluster is a Proxmox cluster: the parent of its nodes, carrying
	// quorum.
	KindCluster Kind = "cluster"
)

// Kinds lists the kinds every report counts, in report order. A
// cluster is counted only where there is one (Counts), so reports of a
// fleet without one read as they always did.
var Kinds = []Kind{KindNode, KindVM, KindContainer, KindStorage, KindDisk}

// Valid reports whether k is a known kind.
func (k Kind) Valid() bool {
	switch k {
	case KindNode, KindVM, KindContainer, KindStorage, KindDisk, KindCluster:
		return true
	}
	return false
}

// Guest reports whether k is a VM or a container.
func (k Kind) Guest() bool { return k == KindVM || k == KindContainer }

// LabelStorages, on a storage resource, lists (comma-separated) the
// storages that are one filesystem and are reported as this one resource.
const LabelStorages = "storages"

// Resource statuses.
const (
	StatusOnline  = "online"
	StatusOffline = "offline"
	StatusUnknown = "unknown"
	StatusRunning = "running"
	StatusStopped = "stopped"
	StatusPaused  = "paused"
)

// Metric names the detectors read. Metric values ending in _percent or
// _percent_avg are percentages (0..100).
const (
	MetricCPU    = "cpu_percent"
	MetricMemory = "memory_percent"
	MetricDisk   = "disk_percent"
	MetricUsage  = "usage_percent"
	// MetricSwap is a node's swap in use, of its swap size.
	MetricSwap = "swap_percent"
	// MetricIOWait is the share of a node's CPU time waiting on IO.
	MetricIOWait        = "iowait_percent"
	MetricWindowSeconds = "window_seconds"
	avgSuffix           = "_avg"
)

// Snapshot is one collected view of the fleet.
type Snapshot struct {
	Version   int        `json:"version"`
	TakenAt   time.Time  `json:"taken_at"`
	Source    string     `json:"source,omitempty"`
	Resources []Resource `json:"resources"`
	// heldFrom: the decoding that handed exactly these resources, in
	// order, to DecodeOptions.Kept (see HeldFrom); 0: none.
	heldFrom uint64
}

// Resource is one host, guest, storage pool or disk.
//
// A decoded resource may share what its fields refer to with other
// resources of the same snapshot: the array of its metrics, its tags slice,
// its backup times. So a fleet of a million costs a few hundred bytes each.
// Treat them as read-only, and copy before changing one.
type Resource struct {
	ID     string `json:"id"`
	Kind   Kind   `json:"kind"`
	Name   string `json:"name,omitempty"`
	Parent string `json:"parent,omitempty"`
	// Parents are the resource's other parents in the topology (a
	// guest's storages), canonical ids, none of them the resource itself.
	Parents   []string          `json:"parents,omitempty"`
	Status    string            `json:"status,omitempty"`
	Tags      []string          `json:"tags,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	Metrics   Metrics           `json:"metrics,omitempty"`
	Addresses []string          `json:"addresses,omitempty"`
	Reachable *bool             `json:"reachable,omitempty"`
	Backup    *Backup           `json:"backup,omitempty"`
	Smart     *Smart            `json:"smart,omitempty"`
	ZFS       *ZFS              `json:"zfs,omitempty"`
	// BackupStore is set on a storage resource that is a backup datastore
	// whose jobs and verifications its source read (a PBS datastore).
	BackupStore *BackupStore `json:"backup_store,omitempty"`
	// Quorum is set on a cluster resource whose source read its quorum.
	Quorum *Quorum `json:"quorum,omitempty"`
	// HA is set on a guest or node whose source read the HA manager's
	// status (docs/SOURCES.md#fields-beyond-the-first-contract).
	HA *HA `json:"ha,omitempty"`
	// Guest is a guest's operational state (locks, tasks), when its
	// source read any. One pointer keeps every other resource small.
	Guest *GuestState `json:"guest,omitempty"`
	Notes string      `json:"notes,omitempty"`
	Logs  []string    `json:"logs,omitempty"`
	// Replication is set on a guest whose node's replication jobs its
	// source read: the guest's jobs, none when it has none.
	Replication *Replication `json:"replication,omitempty"`
	// Certificate is set on a node whose certificates its source read:
	// the one that expires first.
	Certificate *Certificate `json:"certificate,omitempty"`
	// Updates is set on a node whose package updates its source read:
	// none pending is Packages 0.
	Updates *Updates `json:"updates,omitempty"`
}

// MaxParents bounds a resource's parents list.
const MaxParents = 64

// ParentIDs returns every parent of r: Parent (canonical) first, then
// Parents, without repeats.
func (r *Resource) ParentIDs() []string {
	if r.Parent == "" && len(r.Parents) == 0 {
		return nil
	}
	out := make([]string, 0, 1+len(r.Parents))
	if r.Parent != "" {
		out = append(out, CanonicalID(r.Parent))
	}
	for _, p := range r.Parents {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// ParentsProblem names the first unfit entry of a parents list, as a
// field ("parents[2]") and a problem; both are "" when every entry is fit.
func ParentsProblem(id string, parents []string) (field, problem string) {
	if len(parents) > MaxParents {
		return "parents", fmt.Sprintf("%d entries, at most %d", len(parents), MaxParents)
	}
	for i, p := range parents {
		switch {
		case strings.TrimSpace(p) == "":
			problem = "required"
		case IDProblem(p) != "":
			problem = IDProblem(p)
		case p == id || (!isCanonical(p) && CanonicalID(p) == id):
			problem = "is the resource itself"
		default:
			continue
		}
		return "parents[" + strconv.Itoa(i) + "]", problem
	}
	return "", ""
}

// Backup is the backup state of a backup-tracked guest.
type Backup struct {
	LastStatus     string     `json:"last_status,omitempty"`
	LastFinishedAt *time.Time `json:"last_finished_at,omitempty"`
	LastSuccessAt  *time.Time `json:"last_success_at,omitempty"`
	LastError      string     `json:"last_error,omitempty"`
	// Storage is the resource id of the storage the newest backup was
	// found on, when the source knows it.
	Storage string `json:"storage,omitempty"`
	// Verify is set when the newest backup's storage verifies backups
	// (a PBS storage listing verification states).
	Verify *Verify `json:"verify,omitempty"`
}

// Verify is the verification of a guest's backups.
type Verify struct {
	// State is the newest backup's: ok, failed or none.
	State string `json:"state"`
	// LastOKAt is when a backup of the guest was last verified ok.
	LastOKAt *time.Time `json:"last_ok_at,omitempty"`
}

// Verification states of Backup.Verification.
const (
	VerifyOK     = "ok"
	VerifyFailed = "failed"
	VerifyNone   = "none"
)

// Backup statuses.
const (
	BackupOK      = "ok"
	BackupFailed  = "failed"
	BackupRunning = "running"
	BackupWarning = "warning"
	BackupUnknown = "unknown"
)

// Smart holds the SMART attributes of a disk.
type Smart struct {
	Health               string `json:"health,omitempty"`
	ReallocatedSectors   int64  `json:"reallocated_sectors,omitempty"`
	PendingSectors       int64  `json:"pending_sectors,omitempty"`
	OfflineUncorrectable int64  `json:"offline_uncorrectable,omitempty"`
	UDMACRCErrors        int64  `json:"udma_crc_errors,omitempty"`
	MediaErrors          int64  `json:"media_errors,omitempty"`
	WearoutPercent       *int64 `json:"wearout_percent,omitempty"`
	TemperatureC         *int64 `json:"temperature_c,omitempty"`
	// NVMeCriticalWarning is the NVMe "Critical Warning" byte: each set
	// bit is one condition (spare low, temperature, reliability, read
	// only, volatile backup failed, persistent memory read only).
	NVMeCriticalWarning int64 `json:"nvme_critical_warning,omitempty"`
	// GrownDefects is the SAS "Elements in grown defect list".
	GrownDefects int64 `json:"grown_defects,omitempty"`
}

// ZFS is the state of a ZFS pool, reported on the storage resource that
// stands for the pool.
type ZFS struct {
	// State is the pool's health as zpool reports it: ONLINE, DEGRADED,
	// FAULTED, OFFLINE, REMOVED, UNAVAIL or SUSPENDED.
	State          string `json:"state,omitempty"`
	ReadErrors     int64  `json:"read_errors,omitempty"`
	WriteErrors    int64  `json:"write_errors,omitempty"`
	ChecksumErrors int64  `json:"checksum_errors,omitempty"`
	// Scrub is the pool's last scrub, when its scan line said.
	Scrub *Scrub `json:"scrub,omitempty"`
}

// Scrub is a ZFS pool's last scrub, as its scan line says.
type Scrub struct {
	// State is ScrubFinished, ScrubRunning or ScrubNever.
	State string `json:"state"`
	// At is when the last scrub finished.
	At *time.Time `json:"at,omitempty"`
	// Repaired is what it repaired ("12K"); absent when nothing.
	Repaired string `json:"repaired,omitempty"`
	// Errors is the errors it found.
	Errors int64 `json:"errors,omitempty"`
}

// Scrub states.
const (
	ScrubFinished = "finished"
	ScrubRunning  = "running"
	ScrubNever    = "never"
)

// Quorum is a cluster's quorum as its source read it.
type Quorum struct {
	Quorate bool `json:"quorate"`
	// Nodes is the cluster's member count; NodesOnline those online.
	Nodes       int64 `json:"nodes,omitempty"`
	NodesOnline int64 `json:"nodes_online,omitempty"`
}

// HA is a resource's place in its cluster's HA manager, as read. A
// resource the manager does not know has Managed false: that is
// evidence, where no HA at all is not.
type HA struct {
	// Managed: the guest is an HA resource; the node has an LRM.
	Managed bool `json:"managed"`
	// State is a guest's service state (started, stopped, error, fence,
	// recovery, freeze, migrate...) or a node's LRM state (active, idle,
	// maintenance...).
	State string `json:"state,omitempty"`
	// Requested is a guest's requested state: started, stopped,
	// disabled or ignored.
	Requested string `json:"requested,omitempty"`
}

// Replication is a guest's storage replication as its node reported
// it. Jobs is never null when read, so a guest without jobs is told
// from one whose node was not read.
type Replication struct {
	Jobs []ReplicationJob `json:"jobs"`
}

// MaxReplicationJobs bounds a guest's replication jobs.
const MaxReplicationJobs = 16

// ReplicationJob is one replication job of a guest and its last run.
type ReplicationJob struct {
	ID       string `json:"id"`
	Target   string `json:"target,omitempty"`
	Schedule string `json:"schedule,omitempty"`
	// IntervalSeconds is the schedule's interval when the source
	// understood the schedule; 0 when it did not.
	IntervalSeconds int64      `json:"interval_seconds,omitempty"`
	LastSync        *time.Time `json:"last_sync,omitempty"`
	// FailCount is the failed syncs in a row; Error the last one's.
	FailCount int64  `json:"fail_count,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Updates are a node's pending package updates.
type Updates struct {
	// Packages counts the packages with an update.
	Packages int `json:"packages"`
	// Security counts those from a security repository.
	Security int `json:"security"`
	// Names are the first few packages (MaxUpdateNames), security
	// ones first.
	Names []string `json:"names,omitempty"`
}

// MaxUpdateNames bounds Updates.Names.
const MaxUpdateNames = 5

// Certificate is a node's TLS certificate that expires first.
type Certificate struct {
	// File names it on the node ("pveproxy-ssl.pem").
	File     string    `json:"file,omitempty"`
	Subject  string    `json:"subject,omitempty"`
	NotAfter time.Time `json:"not_after"`
}

// HA states the detectors and the other rules read.
const (
	HAStarted     = "started"
	HAError       = "error"
	HAFence       = "fence"
	HARecovery    = "recovery"
	HAFreeze      = "freeze"
	HAActive      = "active"
	HAIdle        = "idle"
	HAMaintenance = "maintenance"
)

// GuestState is what a guest's source read of its operations.
type GuestState struct {
	// Lock is set on a guest its source found locked (a PVE config lock).
	Lock *Lock `json:"lock,omitempty"`
	// Task is the guest's newest running task, when its source read its
	// tasks and one runs.
	Task *Task `json:"task,omitempty"`
	// PowerTask is the guest's newest start, stop or shutdown task its
	// source listed (qmstart, qmstop, qmshutdown, vzstart...).
	PowerTask *Task `json:"power_task,omitempty"`
	// OnBoot is the guest config's onboot, when its config was read.
	OnBoot *bool `json:"onboot,omitempty"`
	// TasksRead says the source read the tasks of the guest's node: no
	// Task or PowerTask is then evidence that none was listed.
	TasksRead bool `json:"tasks_read,omitempty"`
	// BackupScheduled says whether an enabled backup job selects the
	// guest; absent when its source did not read the jobs, or found none.
	BackupScheduled *bool `json:"backup_scheduled,omitempty"`
	// Snapshots is the source's last read of the guest's snapshots.
	Snapshots *Snapshots `json:"snapshots,omitempty"`
}

// Snapshots is what a source read of a guest's snapshots.
type Snapshots struct {
	// Count is the snapshots listed (PVE's "current" is none).
	Count int `json:"count"`
	// Oldest and OldestAt name the oldest snapshot; absent with none.
	Oldest   string     `json:"oldest,omitempty"`
	OldestAt *time.Time `json:"oldest_at,omitempty"`
	// ReadAt is when they were read (a source may reuse a recent read).
	ReadAt time.Time `json:"read_at"`
}

// Lock is a guest's config lock: an operation (backup, migrate,
// snapshot...) holds the guest.
type Lock struct {
	Name string `json:"name"`
	// Since is the time the source knows the lock is held from; absent
	// when it could not tell (its tasks were not read).
	Since *time.Time `json:"since,omitempty"`
}

// Task is one task of a guest, as its source listed it.
type Task struct {
	// Type is the operation (vzdump, qmigrate, qmstop...).
	Type string `json:"type"`
	// UPID is the task's id on its node.
	UPID      string    `json:"upid,omitempty"`
	User      string    `json:"user,omitempty"`
	StartedAt time.Time `json:"started_at"`
	// EndedAt and Status are absent while the task runs.
	EndedAt *time.Time `json:"ended_at,omitempty"`
	Status  string     `json:"status,omitempty"`
}

// BackupStore is what keeps a backup datastore sound: the last runs of
// its jobs and the backup snapshots whose last verification failed.
type BackupStore struct {
	Jobs []Job `json:"jobs,omitempty"`
	// VerifyFailed names the backup snapshots ("vm/100/2026-11-30T02:00:00Z")
	// whose last verification failed, at most MaxVerifyFailed of them.
	VerifyFailed []string `json:"verify_failed,omitempty"`
}

// MaxVerifyFailed bounds BackupStore.VerifyFailed.
const MaxVerifyFailed = 100

// Job is the last run of one scheduled datastore job.
type Job struct {
	ID   string `json:"id"`
	Type string `json:"type"` // one of JobTypes
	// LastStatus is one of the backup statuses (ok, failed, warning,
	// running, unknown); empty: it has not run.
	LastStatus     string     `json:"last_status,omitempty"`
	LastFinishedAt *time.Time `json:"last_finished_at,omitempty"`
	LastError      string     `json:"last_error,omitempty"`
}

// JobTypes are the datastore jobs: verification, pruning, garbage
// collection and sync.
var JobTypes = []string{"verify", "prune", "gc", "sync"}

// Metric returns the sustained value of a metric: the _avg value when
// present, else the current value. ok is false when neither is present.
func (r *Resource) Metric(name string) (v float64, avg bool, ok bool) {
	if v, ok := r.Metrics.Get(avgName(name)); ok {
		return v, true, true
	}
	v, ok = r.Metrics.Get(name)
	return v, false, ok
}

// avgName is name+"_avg", without building the string for the metrics
// the detectors read.
func avgName(name string) string {
	switch name {
	case MetricCPU:
		return MetricCPU + avgSuffix
	case MetricMemory:
		return MetricMemory + avgSuffix
	case MetricDisk:
		return MetricDisk + avgSuffix
	case MetricUsage:
		return MetricUsage + avgSuffix
	case MetricSwap:
		return MetricSwap + avgSuffix
	case MetricIOWait:
		return MetricIOWait + avgSuffix
	}
	return name + avgSuffix
}

// MetricsStale reports whether the metrics of r are stale: the resource is
// offline or stopped, so metric detectors skip it.
func (r *Resource) MetricsStale() bool {
	return r.Status == StatusOffline || r.Status == StatusStopped
}

// HasTag reports whether r carries tag t (case-insensitive).
func (r *Resource) HasTag(t string) bool {
	for _, x := range r.Tags {
		if strings.EqualFold(x, t) {
			return true
		}
	}
	return false
}

// Counts returns the number of resources of every kind.
func (s *Snapshot) Counts() map[Kind]int {
	// Counted in an array (a map increment per resource is a hash each);
	// a kind outside the catalogue (never kept by Decode) is counted too.
	var n [len(kindSlots)]int
	var other map[Kind]int
	for i := range s.Resources {
		k := s.Resources[i].Kind
		if j := kindSlot(k); j >= 0 {
			n[j]++
			continue
		}
		if other == nil {
			other = map[Kind]int{}
		}
		other[k]++
	}
	out := make(map[Kind]int, len(Kinds)+len(other))
	for _, k := range Kinds {
		out[k] = n[kindSlot(k)]
	}
	for k, c := range other {
		out[k] = c
	}
	return out
}

// kindSlots are the known kinds, each at its index in Counts' array.
var kindSlots = [...]Kind{KindNode, KindVM, KindContainer, KindStorage, KindDisk}

func kindSlot(k Kind) int {
	switch k {
	case KindNode:
		return 0
	case KindVM:
		return 1
	case KindContainer:
		return 2
	case KindStorage:
		return 3
	case KindDisk:
		return 4
	}
	return -1
}

// CanonicalID canonicalises a resource id: trimmed, with the kind prefix
// (before the first '/') lower-cased. Used by every matcher.
// An id that is already canonical is returned as is, without a copy
// (strings.ToLower returns a lower-case string itself).
func CanonicalID(id string) string {
	id = strings.TrimSpace(id)
	if i := strings.IndexByte(id, '/'); i > 0 {
		if kind := strings.ToLower(id[:i]); kind != id[:i] {
			return kind + id[i:]
		}
	}
	return id
}

// MaxIDBytes caps a resource id (and a parent id).
const MaxIDBytes = 256

// IDProblem says what makes id unfit to be a resource id, or "" when it is
// fit. An id is shown on terminals, stored and published. So it must be
// valid UTF-8 of printable characters only (no control, format or bidi
// characters, no line or paragraph separators), at most MaxIDBytes long.
func IDProblem(id string) string {
	if len(id) > MaxIDBytes {
		return fmt.Sprintf("longer than %d bytes", MaxIDBytes)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x20 || c == 0x7f {
			return fmt.Sprintf("control character %q at byte %d", rune(c), i)
		} else if c >= utf8.RuneSelf {
			return idRunesProblem(id)
		}
	}
	return ""
}

func idRunesProblem(id string) string {
	if !utf8.ValidString(id) {
		return "not valid UTF-8"
	}
	for i, r := range id {
		if !unicode.IsPrint(r) {
			return fmt.Sprintf("unprintable character %U at byte %d", r, i)
		}
	}
	return ""
}

// ProblemID is id as a Problem names it: as it is when IDProblem finds
// nothing, else quoted with every unprintable character escaped and cut
// to MaxIDBytes, so a report of a bad id carries no live text.
func ProblemID(id string) string {
	if IDProblem(id) == "" {
		return id
	}
	q := strconv.QuoteToGraphic(id)
	q = q[1 : len(q)-1]
	if len(q) > MaxIDBytes {
		q = strings.ToValidUTF8(q[:MaxIDBytes], "") + "..."
	}
	return q
}

// Source collects a snapshot. Implementations validate the document they
// read with Decode so invalid resources are reported, not silently used.
type Source interface {
	// Collect returns the snapshot and the resources it dropped as invalid.
	Collect(ctx context.Context) (*Snapshot, []Problem, error)
}

// A KeptSource is a Source that can hand its resources to a consumer while
// it decodes them (DecodeOptions.Kept), so work on them can start before
// the last one is read. Collect is CollectKept without a consumer. Like
// the decoder, a KeptSource never changes a resource it handed over (it
// may set the snapshot's own fields, as exec stamps taken_at), and it
// calls kept only on the goroutine of CollectKept, before it returns.
type KeptSource interface {
	Source
	CollectKept(ctx context.Context, kept func(Handed)) (*Snapshot, []Problem, error)
}

// HeldFrom names the decoding (Handed.Decoding) whose batches s's resources
// are exactly, in order. Those are the batches it handed over since its
// last batch at position 0: the same elements, or their verbatim copies
// (the slice grew). So what a consumer made of them is what it would make
// of s.Resources. It is 0 when no decoding's are:
// - s was decoded without Kept;
// - a duplicate was dropped;
// - its last array handed nothing over;
// - or it was built otherwise.
func (s *Snapshot) HeldFrom() uint64 { return s.heldFrom }

// UsagePoint is one stored usage sample of a resource: percent used at a
// time (the history capacity_forecast reads).
type UsagePoint struct {
	At    time.Time
	Value float64
}

// A UsageBackfiller is a Source that can tell its resources' past usage,
// by resource id, so a new database has history to forecast from at once
// (the demo fleet). The run records it only into an empty history.
type UsageBackfiller interface {
	BackfillUsage(now time.Time) map[string][]UsagePoint
}

// A CoveringSource is a Source of several that can tell what one of them
// covers. It says whether the resource id is one the named source reported
// when it last collected. Known is false when that source has not collected
// yet: it may cover anything.
type CoveringSource interface {
	Covers(source, id string) (covered, known bool)
}

// SourceFunc adapts a function to Source.
type SourceFunc func(ctx context.Context) (*Snapshot, []Problem, error)

// Collect calls f.
func (f SourceFunc) Collect(ctx context.Context) (*Snapshot, []Problem, error) { return f(ctx) }

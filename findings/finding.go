// Package findings owns the Finding model: identity from facts, the
// lifecycle and operator actions, silence matching, the investigation gate,
// the publish policy and the retention policy. It is pure domain code with
// no I/O; package store persists it.
package findings

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/patrold/patrold/signals"
)

// Severity of a finding, ordered info < watch < warning < critical.
type Severity string

// Severities.
const (
	SeverityInfo     Severity = "info"
	SeverityWatch    Severity = "watch"
	SeverityWarning  Severity = "warning"
	SeverityCritical Severity = "critical"
)

// Rank orders severities (info 1 < watch 2 < warning 3 < critical 4);
// unknown severities rank 0. One scale serves findings and matching.
func (s Severity) Rank() int { return signals.SeverityRank(string(s)) }

// Valid reports whether s is a known severity.
func (s Severity) Valid() bool { return s.Rank() > 0 }

// Category of a finding.
type Category string

// Categories; anything else becomes general.
const (
	CategoryPerformance Category = "performance"
	CategoryCapacity    Category = "capacity"
	CategoryReliability Category = "reliability"
	CategoryBackup      Category = "backup"
	CategorySecurity    Category = "security"
	CategoryGeneral     Category = "general"
)

// NormalizeCategory maps any string to a known category.
func NormalizeCategory(s string) Category {
	switch c := Category(strings.ToLower(strings.TrimSpace(s))); c {
	case CategoryPerformance, CategoryCapacity, CategoryReliability, CategoryBackup, CategorySecurity:
		return c
	}
	return CategoryGeneral
}

// Source says who filed a finding.
type Source string

// Sources.
const (
	SourceModel         Source = "model"
	SourceDeterministic Source = "deterministic"
)

// Status is the stored lifecycle status; the richer loop state is derived.
type Status string

// Statuses.
const (
	StatusActive   Status = "active"
	StatusResolved Status = "resolved"
)

// keyAliases maps normalised variants to one canonical key. Canonical keys of
// the signal catalogue keep their underscore spelling.
var keyAliases = map[string]string{
	"cpu-high": "high_cpu", "high-cpu": "high_cpu", "cpu": "high_cpu", "cpu-usage-high": "high_cpu",
	"memory-high": "high_memory", "high-memory": "high_memory", "mem-high": "high_memory", "high-mem": "high_memory", "memory": "high_memory",
	"disk-high": "high_disk", "high-disk": "high_disk", "disk-full": "high_disk", "storage-high": "high_disk", "high-storage": "high_disk", "disk-usage-high": "high_disk",
	"smart-failure": "smart_failure", "smart": "smart_failure", "disk-smart": "smart_failure", "smart-error": "smart_failure",
	"backup-failed": "backup_failed", "failed-backup": "backup_failed",
	"backup-stale": "backup_stale", "stale-backup": "backup_stale", "backup-old": "backup_stale", "no-recent-backup": "backup_stale",
	"guest-unreachable": "guest_unreachable", "unreachable": "guest_unreachable", "vm-unreachable": "guest_unreachable", "host-unreachable": "guest_unreachable",
	"node-offline": "node_offline", "node-down": "node_offline",
	"disk-temperature": "disk_temperature", "disk-temp": "disk_temperature",
	"disk-wear": "disk_wear", "ssd-wear": "disk_wear", "disk-wearout": "disk_wear",
	"zfs-pool-degraded": "zfs_pool_degraded", "zpool-degraded": "zfs_pool_degraded",
	"capacity-forecast": "capacity_forecast", "storage-full-soon": "capacity_forecast", "disk-full-soon": "capacity_forecast",
	"backup-job-failed": "backup_job_failed", "datastore-job-failed": "backup_job_failed",
	"snapshot-old": "snapshot_old", "old-snapshot": "snapshot_old", "stale-snapshot": "snapshot_old",
	"backup-unscheduled": "backup_unscheduled", "not-backed-up": "backup_unscheduled", "no-backup-job": "backup_unscheduled",
	"guest-down": "guest_down", "vm-down": "guest_down", "guest-stopped": "guest_down",
	"lock-stuck": "lock_stuck", "stuck-lock": "lock_stuck", "guest-locked": "lock_stuck",
	"quorum-lost": "quorum_lost", "no-quorum": "quorum_lost", "cluster-quorum-lost": "quorum_lost",
	"high-swap": "high_swap", "swap-high": "high_swap", "swap": "high_swap",
	"zfs-scrub-overdue": "zfs_scrub_overdue", "scrub-overdue": "zfs_scrub_overdue", "zpool-scrub-overdue": "zfs_scrub_overdue",
	"backup-unverified": "backup_unverified", "unverified-backup": "backup_unverified", "backup-verify-failed": "backup_unverified",
	"updates-pending": "updates_pending", "pending-updates": "updates_pending", "apt-updates": "updates_pending",
	"certificate-expiring": "certificate_expiring", "cert-expiring": "certificate_expiring", "certificate-expired": "certificate_expiring",
	"replication-failed": "replication_failed", "replication-failing": "replication_failed", "replication-stale": "replication_failed",
	"ha-error": "ha_error", "ha-failed": "ha_error", "ha-fenced": "ha_error", "ha-resource-error": "ha_error",
	"high-iowait": "high_iowait", "iowait-high": "high_iowait", "iowait": "high_iowait", "io-wait": "high_iowait", "high-io-wait": "high_iowait",
	// patrold's own findings about its source and its probe keep their
	// documented spelling.
	"source-failing": "source_failing", "network-unroutable": "network_unroutable",
	"operation-window": "operation_window", "coverage-gap": "coverage_gap",
}

// canonicalKeys are the aliases' targets, which NormalizeKey maps to
// themselves (TestCanonicalKeysAreFixedPoints).
var canonicalKeys = func() map[string]bool {
	out := map[string]bool{}
	for _, k := range keyAliases {
		out[k] = true
	}
	return out
}()

// NormalizeKey lower-cases a key, turns '_' and spaces into '-', keeps only
// [a-z0-9-], then maps known variants to their canonical key.
func NormalizeKey(key string) string {
	if canonicalKeys[key] {
		return key // the catalogue's keys, as every deterministic signal files them
	}
	return normalizeKey(key)
}

func normalizeKey(key string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(key)) {
		switch {
		case r == '_' || r == ' ':
			b.WriteByte('-')
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		}
	}
	k := strings.Trim(b.String(), "-")
	if alias, ok := keyAliases[k]; ok {
		return alias
	}
	if k == "" {
		return "general"
	}
	return k
}

// ID is the identity of a finding: the first 16 hex characters of the
// SHA-256 over "resource_id:category:key". Same facts, same finding.
func ID(resourceID string, category Category, key string) string {
	var buf [128]byte
	in := append(buf[:0], resourceID...)
	in = append(in, ':')
	in = append(in, category...)
	in = append(in, ':')
	in = append(in, key...)
	sum := sha256.Sum256(in)
	return hex.EncodeToString(sum[:8])
}

// Finding is one problem on one resource, carried through its lifecycle.
type Finding struct {
	ID           string `json:"id"`
	Key          string `json:"key"`
	ResourceID   string `json:"resource_id"`
	ResourceKind string `json:"resource_kind,omitempty"`
	ResourceName string `json:"resource_name,omitempty"`
	// ResourceNode is the node the resource is on (a node's own name),
	// when the snapshot says.
	ResourceNode   string   `json:"resource_node,omitempty"`
	ResourceTags   []string `json:"resource_tags,omitempty"`
	Category       Category `json:"category"`
	Severity       Severity `json:"severity"`
	Source         Source   `json:"source"`
	Title          string   `json:"title"`
	Description    string   `json:"description,omitempty"`
	Recommendation string   `json:"recommendation,omitempty"`
	Evidence       string   `json:"evidence,omitempty"`
	Status         Status   `json:"status"`

	DetectedAt      time.Time  `json:"detected_at"`
	LastSeenAt      time.Time  `json:"last_seen_at"`
	ResolvedAt      *time.Time `json:"resolved_at,omitempty"`
	ResolveReason   string     `json:"resolve_reason,omitempty"`
	ResolveNote     string     `json:"resolve_note,omitempty"`
	TimesRaised     int        `json:"times_raised"`
	RegressionCount int        `json:"regression_count"`
	LastRunID       string     `json:"last_run_id,omitempty"`

	Operator
	Investigation
	Publication
	Transitions []time.Time `json:"-"` // open/resolve transition times inside the flap window
	Flapping    bool        `json:"flapping,omitempty"`
	// Silenced records whether a silence matched at the last evaluation.
	Silenced bool `json:"silenced,omitempty"`
	// InhibitedBy is the id of the active parent finding that explains
	// this one (docs/FINDINGS.md#inhibition): recorded, not published,
	// not investigated. "" when none does.
	InhibitedBy string `json:"inhibited_by,omitempty"`
	// Inhibits counts the active findings this one explains, where a
	// reader filled it in (the store's commit and finding reads); it is
	// not stored.
	Inhibits int `json:"inhibits,omitempty"`
	// Explains lists the ids of the active findings this one explains,
	// where a reader filled it in (the store's Get); it is not stored.
	Explains []string `json:"explains,omitempty"`
}

// Held reports whether f is recorded but kept from subscribers and
// investigation: silenced or inhibited.
func (f *Finding) Held() bool { return f.Silenced || f.InhibitedBy != "" }

// Operator holds the state operators set on a finding.
type Operator struct {
	AcknowledgedAt      *time.Time `json:"acknowledged_at,omitempty"`
	SnoozedUntil        *time.Time `json:"snoozed_until,omitempty"`
	DismissedReason     string     `json:"dismissed_reason,omitempty"`
	DismissedAt         *time.Time `json:"dismissed_at,omitempty"`
	Suppressed          bool       `json:"suppressed,omitempty"`
	SeenWhileSuppressed int        `json:"seen_while_suppressed,omitempty"`
}

// Investigation holds the remediation bookkeeping of a finding.
type Investigation struct {
	// Attempts counts the investigations of the current episode (since
	// the finding was last opened or reopened); the gate's max_attempts
	// reads it.
	Attempts int `json:"investigation_attempts"`
	// Attempt is the number of the current (or last) investigation on the
	// wire (requests, sessions, outcomes): unique per finding across
	// episodes, so an outcome of an earlier episode is never taken as this
	// one's. 0: none since the finding was (re)opened.
	Attempt              int        `json:"investigation_attempt,omitempty"`
	InvestigationStatus  string     `json:"investigation_status,omitempty"` // "running" or ""
	InvestigationStarted *time.Time `json:"investigation_started_at,omitempty"`
	LastInvestigationAt  *time.Time `json:"last_investigation_at,omitempty"`
	LastOutcome          string     `json:"last_outcome,omitempty"`
	InvestigationSession string     `json:"investigation_session_id,omitempty"`
	FixSummary           string     `json:"fix_summary,omitempty"`
	PreviousFixSummary   string     `json:"previous_fix_summary,omitempty"`
}

// Publication records what was last published so the publish policy
// survives restarts.
type Publication struct {
	LastPublishedAt       *time.Time `json:"last_published_at,omitempty"`
	LastPublishedSeverity Severity   `json:"last_published_severity,omitempty"`
	LastPublishedEvent    string     `json:"last_published_event,omitempty"`
}

// Active reports whether the finding is not resolved.
func (f *Finding) Active() bool { return f.Status == StatusActive }

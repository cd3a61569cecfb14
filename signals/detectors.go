package signals

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/snapshot"
)

var metricLabel = map[Type]string{TypeHighCPU: "CPU", TypeHighMemory: "memory", TypeHighDisk: "disk usage",
	TypeHighSwap: "swap", TypeHighIOWait: "IO wait"}

// above judges v against a threshold that rises, with hysteresis: it
// opens strictly above trigger and, once active (key k), stays open
// until strictly below clear; past critical, when set, it is critical.
// held says it is open only because it was active; ok false: no signal.
// level (health.go) is the variant that opens at the trigger itself.
func above(v float64, t alerts.Threshold, active Active, k Key) (severity string, threshold float64, held, ok bool) {
	switch {
	case v > t.Trigger:
	//mutate:above-hysteresis ./signals ^TestHysteresis$
	case v >= t.Clear && active[k]:
		// Only a value between clear and trigger asks whether the signal
		// was active: most resources are below clear, and skip the lookup.
		held = true
	default:
		return "", 0, false, false
	}
	severity, threshold = SeverityWarning, t.Trigger
	if t.Critical > 0 && v > t.Critical {
		severity, threshold = SeverityCritical, t.Critical
	}
	return severity, threshold, held, true
}

// appendMetric applies the threshold rule with hysteresis: a signal opens
// strictly above trigger, and once active stays open until strictly below
// clear. Stale metrics (offline or stopped resources) are skipped.
func appendMetric(out []Signal, r *snapshot.Resource, typ Type, metric string, t alerts.Threshold, active Active) []Signal {
	if t.Trigger <= 0 || r.MetricsStale() {
		return out
	}
	v, avg, ok := r.Metric(metric)
	if !ok {
		return out
	}
	severity, threshold, held, ok := above(v, t, active, Key{Type: typ, ResourceID: r.ID})
	if !ok {
		return out
	}
	s := newSignal(r, typ, severity)
	s.Value, s.Threshold = round2(v), threshold
	s.Evidence = map[string]any{"metric": metric, "value": s.Value, "trigger": t.Trigger, "clear": t.Clear}
	if t.Critical > 0 {
		s.Evidence["critical"] = t.Critical
	}
	how := "current"
	if avg {
		how = "sustained"
		s.Evidence["metric"] = metric + "_avg"
		if w, ok := r.Metrics.Get(snapshot.MetricWindowSeconds); ok && w > 0 {
			s.Evidence["window_seconds"] = w
			how = "sustained over " + (time.Duration(w) * time.Second).String()
		}
	}
	if held {
		s.Evidence["held_by_hysteresis"] = true
	}
	s.Summary = metricSummary(kindWord(r), metricLabel[typ], display(r), v, how, held, threshold, t.Clear, t.Trigger)
	if names := r.Labels[snapshot.LabelStorages]; names != "" && r.Kind == snapshot.KindStorage {
		// Several storages on one filesystem, reported as this one.
		names = clip(names, MaxErrorRunes)
		s.Evidence["storages"] = names
		s.Summary += "; one filesystem shared by " + strings.ReplaceAll(names, ",", ", ")
	}
	return append(out, s)
}

// metricSummary is the summary of a metric signal, as
//
//	fmt.Sprintf("%s %s on %s at %.1f%% (%s), above %g", kind, label, name, v, how, threshold)
//
// or, held open by hysteresis,
//
//	fmt.Sprintf("%s %s on %s at %.1f%% (%s), still above clear %g after exceeding %g", kind, label, name, v, how, clear, trigger)
//
// written without fmt (one per signal: 11k at 10 % faults of 100k
// resources). TestMetricSummaryIsSprintf holds the two to the same text.
func metricSummary(kind, label, name string, v float64, how string, held bool, threshold, clear, trigger float64) string {
	b := make([]byte, 0, len(kind)+len(label)+len(name)+len(how)+64)
	b = append(b, kind...)
	b = append(b, ' ')
	b = append(b, label...)
	b = append(b, " on "...)
	b = append(b, name...)
	b = append(b, " at "...)
	b = strconv.AppendFloat(b, v, 'f', 1, 64)
	b = append(b, "% ("...)
	b = append(b, how...)
	if held {
		b = append(b, "), still above clear "...)
		b = strconv.AppendFloat(b, clear, 'g', -1, 64)
		b = append(b, " after exceeding "...)
		b = strconv.AppendFloat(b, trigger, 'g', -1, 64)
	} else {
		b = append(b, "), above "...)
		b = strconv.AppendFloat(b, threshold, 'g', -1, 64)
	}
	return string(b)
}

// smartFailure: failing health, pending/uncorrectable/media errors or an
// NVMe critical warning are critical; reallocated sectors, CRC errors or a
// SAS grown defect list are a warning. One signal per disk, highest
// severity wins.
func smartFailure(r *snapshot.Resource) (Signal, bool) {
	sm := r.Smart
	if sm == nil {
		return Signal{}, false
	}
	var critical, warning []string
	health := strings.ToUpper(strings.TrimSpace(sm.Health))
	switch health {
	case "", "UNKNOWN", "PASSED", "OK":
	default:
		critical = append(critical, fmt.Sprintf("health %s", health))
	}
	// A healthy disk (most of them) allocates nothing: the counts are
	// judged first, and the evidence is built only for a signal.
	counters := [...]struct {
		name     string
		n        int64
		critical bool
	}{
		{"pending_sectors", sm.PendingSectors, true},
		{"offline_uncorrectable", sm.OfflineUncorrectable, true},
		{"media_errors", sm.MediaErrors, true},
		{"reallocated_sectors", sm.ReallocatedSectors, false},
		{"udma_crc_errors", sm.UDMACRCErrors, false},
	}
	anyCount := sm.NVMeCriticalWarning > 0 || sm.GrownDefects > 0
	for _, c := range counters {
		anyCount = anyCount || c.n > 0
	}
	if len(critical) == 0 && !anyCount {
		return Signal{}, false
	}
	ev := make(map[string]any, 1+len(counters))
	ev["health"] = sm.Health
	value := 0.0
	for _, c := range counters {
		ev[c.name] = c.n
		if c.n > 0 {
			reason := fmt.Sprintf("%s %d", strings.ReplaceAll(c.name, "_", " "), c.n)
			if c.critical {
				critical = append(critical, reason)
			} else {
				warning = append(warning, reason)
			}
			value = max(value, float64(c.n))
		}
	}
	// The NVMe and SAS fields are in the evidence only when set, so the
	// evidence of an ATA disk is what it always was.
	//mutate:smart-nvme-critical-warning ./signals ^TestSmartNVMeAndSAS$
	if w := sm.NVMeCriticalWarning; w > 0 {
		ev["nvme_critical_warning"] = w
		critical = append(critical, fmt.Sprintf("NVMe critical warning 0x%02x (%s)", w, strings.Join(nvmeWarnings(w), ", ")))
		value = max(value, float64(w))
	}
	//mutate:smart-sas-grown-defects ./signals ^TestSmartNVMeAndSAS$
	if g := sm.GrownDefects; g > 0 {
		ev["grown_defects"] = g
		warning = append(warning, fmt.Sprintf("grown defects %d", g))
		value = max(value, float64(g))
	}
	severity, reasons := SeverityCritical, critical
	if len(critical) == 0 {
		severity, reasons = SeverityWarning, warning
	} else {
		reasons = append(reasons, warning...)
	}
	s := newSignal(r, TypeSmartFailure, severity)
	s.Value, s.Threshold, s.Evidence = value, 0, ev
	s.Summary = fmt.Sprintf("disk %s reports SMART problems: %s", display(r), strings.Join(reasons, ", "))
	return s, true
}

// nvmeWarningBits name the bits of the NVMe Critical Warning byte (NVMe
// base specification, SMART / Health Information log, byte 0).
var nvmeWarningBits = [...]string{
	"spare capacity below threshold", "temperature out of range", "reliability degraded",
	"read only", "volatile memory backup failed", "persistent memory read only",
}

func nvmeWarnings(w int64) []string {
	var out []string
	for i, name := range nvmeWarningBits {
		if w&(1<<i) != 0 {
			out = append(out, name)
		}
	}
	if w>>len(nvmeWarningBits) != 0 {
		out = append(out, fmt.Sprintf("reserved bits 0x%02x", w>>len(nvmeWarningBits)<<len(nvmeWarningBits)))
	}
	return out
}

// appendBackup: a failed backup inside the window, and a last success older
// than the window (or none at all). Ages are measured from taken_at.
func appendBackup(out []Signal, r *snapshot.Resource, maxAge time.Duration, now time.Time) []Signal {
	b := r.Backup
	if b == nil || maxAge <= 0 {
		return out
	}
	window := maxAge.Hours()
	if b.LastStatus == snapshot.BackupFailed {
		finished := now
		if b.LastFinishedAt != nil {
			finished = *b.LastFinishedAt
		}
		if age := now.Sub(finished); age <= maxAge {
			s := newSignal(r, TypeBackupFailed, SeverityWarning)
			s.Value, s.Threshold = round2(age.Hours()), window
			lastError := clip(b.LastError, MaxErrorRunes)
			s.Evidence = map[string]any{"last_status": b.LastStatus, "last_finished_at": finished.UTC().Format(time.RFC3339), "last_error": lastError, "max_age": maxAge.String()}
			withStorage(s.Evidence, b)
			s.Summary = "last backup of " + display(r) + " failed " + roundAge(age) + " ago"
			if lastError != "" {
				s.Summary += ": " + lastError
			}
			out = append(out, s)
		}
	}
	if b.LastSuccessAt == nil {
		s := newSignal(r, TypeBackupStale, SeverityWarning)
		s.Value, s.Threshold = -1, window
		s.Evidence = map[string]any{"last_success_at": nil, "max_age": maxAge.String()}
		s.Summary = display(r) + " has never had a successful backup"
		return append(out, s)
	}
	if age := now.Sub(*b.LastSuccessAt); age > maxAge {
		s := newSignal(r, TypeBackupStale, SeverityWarning)
		s.Value, s.Threshold = round2(age.Hours()), window
		ageText, maxAgeText := roundAge(age), maxAge.String()
		s.Evidence = map[string]any{"last_success_at": b.LastSuccessAt.UTC().Format(time.RFC3339), "age": ageText, "max_age": maxAgeText}
		withStorage(s.Evidence, b)
		s.Summary = "last successful backup of " + display(r) + " was " + ageText + " ago, older than " + maxAgeText
		out = append(out, s)
	}
	return out
}

// withStorage names, in a backup signal's evidence, the storage the
// newest backup was found on, when the source said.
func withStorage(ev map[string]any, b *snapshot.Backup) {
	if b.Storage != "" {
		ev["last_success_storage"] = clip(b.Storage, MaxNameRunes)
	}
}

// unreachable: a running guest whose reachability verdict is false.
func unreachable(r *snapshot.Resource) (Signal, bool) {
	if r.Status != snapshot.StatusRunning || r.Reachable == nil || *r.Reachable {
		return Signal{}, false
	}
	s := newSignal(r, TypeGuestUnreachable, SeverityWarning)
	s.Value, s.Threshold = 0, 0
	s.Evidence = map[string]any{"reachable": false, "addresses": r.Addresses}
	s.Summary = string(r.Kind) + " " + display(r) + " is running but unreachable"
	return s, true
}

// Caps on untrusted text a signal quotes. Detection stays pure: it only
// shortens; the run neutralises what a signal carries before anything is
// stored or shown (patrol.SafeSignals).
const (
	MaxNameRunes  = 64
	MaxErrorRunes = 200
)

func display(r *snapshot.Resource) string {
	if r.Name != "" && r.Name != r.ID {
		return clip(r.Name, MaxNameRunes) + " (" + clip(r.ID, MaxNameRunes) + ")"
	}
	return clip(r.ID, MaxNameRunes)
}

// clip cuts s to at most n runes, marking a cut with an ellipsis.
func clip(s string, n int) string {
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	count := 0
	for i := range s {
		if count == n-1 {
			return s[:i] + "…"
		}
		count++
	}
	return s
}

func kindWord(r *snapshot.Resource) string {
	if r.Kind == snapshot.KindStorage {
		return "storage"
	}
	return string(r.Kind)
}

func roundAge(d time.Duration) string { return d.Round(time.Minute).String() }

func round2(v float64) float64 {
	const f = 100
	if v >= 0 {
		return float64(int64(v*f+0.5)) / f
	}
	return float64(int64(v*f-0.5)) / f
}

// plain writes a threshold or value as the operator set it: the
// shortest form that reads back as the same number (30, 0.5, 12.75).
func plain(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

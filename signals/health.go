package signals

import (
	"fmt"
	"strconv"
	"strings"

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
	v := float64(*reading)
	// reached reports whether v is at or past x in the bad direction.
	reached := func(x float64) bool {
		if falling {
			return v <= x
		}
		return v >= x
	}
	held := false
	switch {
	case reached(t.Trigger):
	case reached(t.Clear) && active[Key{Type: typ, ResourceID: r.ID}]:
		held = true
	default:
		return out
	}
	severity, threshold := SeverityWarning, t.Trigger
	if t.Critical > 0 && reached(t.Critical) {
		severity, threshold = SeverityCritical, t.Critical
	}
	s := newSignal(r, typ, severity)
	s.Value, s.Threshold = v, threshold
	field, what, unit, edge := "temperature_c", "at", " °C", "at or above"
	if falling {
		field, what, unit, edge = "wearout_percent", "has", "% life left", "at or below"
	}
	s.Evidence = map[string]any{"field": field, "value": *reading, "trigger": t.Trigger, "clear": t.Clear}
	if t.Critical > 0 {
		s.Evidence["critical"] = t.Critical
	}
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	s.Summary = fmt.Sprintf("disk %s %s %d%s, %s %s", display(r), what, *reading, unit, edge, g(threshold))
	if held {
		s.Evidence["held_by_hysteresis"] = true
		s.Summary = fmt.Sprintf("disk %s %s %d%s, still %s clear %s after reaching %s", display(r), what, *reading, unit, edge, g(t.Clear), g(t.Trigger))
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
	case zfsCritical[state]:
		severity = SeverityCritical
		reasons = append(reasons, "state "+state)
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

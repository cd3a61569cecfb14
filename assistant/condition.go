package assistant

import (
	"context"
	"fmt"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// Condition is what check_condition found.
type Condition string

// Conditions. Only cleared lets a session report fix_verified.
const (
	ConditionPresent Condition = "present"
	ConditionCleared Condition = "cleared"
	ConditionUnknown Condition = "unknown"
)

// ConditionResult is the result of check_condition.
type ConditionResult struct {
	Condition  Condition `json:"condition"`
	Key        string    `json:"key"`
	ResourceID string    `json:"resource_id"`
	Severity   string    `json:"severity,omitempty"`
	Value      float64   `json:"value,omitempty"`
	Threshold  float64   `json:"threshold,omitempty"`
	Summary    string    `json:"summary,omitempty"`
	// Reason explains an unknown verdict.
	Reason  string    `json:"reason,omitempty"`
	TakenAt time.Time `json:"taken_at"`
}

// CheckCondition runs the deterministic detector for the finding's key over
// its resource in snap, with the current thresholds. The finding is active,
// so the signal stays present until the value is below the clear threshold
// (hysteresis). A key with no detector, a missing resource or a detector
// without the data it needs is unknown, never cleared.
func CheckCondition(snap *snapshot.Snapshot, th signals.Thresholds, f *findings.Finding) ConditionResult {
	out := ConditionResult{Condition: ConditionUnknown, Key: f.Key, ResourceID: f.ResourceID, TakenAt: snap.TakenAt}
	typ, ok := signals.Lookup(f.Key)
	if !ok {
		out.Reason = "no deterministic detector for key " + f.Key
		return out
	}
	r := findResource(snap, f.ResourceID)
	if r == nil {
		out.Reason = "resource is not in the current snapshot"
		return out
	}
	one := *snap
	one.Resources = []snapshot.Resource{*r}
	active := signals.Active{{Type: typ, ResourceID: r.ID}: true}
	for _, s := range signals.Detect(&one, th, active) {
		if s.Type == typ {
			out.Condition, out.Severity, out.Value, out.Threshold = ConditionPresent, s.Severity, s.Value, s.Threshold
			out.Summary = safeText(s.Summary, maxSummaryRunes) // detector text embeds resource names
			return out
		}
	}
	if !signals.Evaluated(r, typ) {
		out.Reason = "the detector lacks the data to decide (missing metric, stale metrics or no verdict)"
		return out
	}
	out.Condition = ConditionCleared
	return out
}

// findResource returns the resource with the canonical id, or nil.
func findResource(snap *snapshot.Snapshot, id string) *snapshot.Resource {
	for i := range snap.Resources {
		if snap.Resources[i].ID == id {
			return &snap.Resources[i]
		}
	}
	want := snapshot.CanonicalID(id)
	for i := range snap.Resources {
		if snapshot.CanonicalID(snap.Resources[i].ID) == want {
			return &snap.Resources[i]
		}
	}
	return nil
}

// ConditionCheck is the writer's check of a finding's condition now, for
// confirming a reported fix: it re-collects from src and runs
// CheckCondition with the current thresholds. Only cleared is absent.
func ConditionCheck(get func(ctx context.Context, id string) (findings.Finding, error), src func() snapshot.Source, th func() signals.Thresholds) func(ctx context.Context, findingID string) (bool, string, error) {
	return func(ctx context.Context, findingID string) (bool, string, error) {
		f, err := get(ctx, findingID)
		if err != nil {
			return false, "", err
		}
		snap, _, err := src().Collect(ctx)
		if err != nil {
			return false, "", fmt.Errorf("collect live state: %w", err)
		}
		res := CheckCondition(snap, th(), &f)
		return res.Condition == ConditionCleared, res.Describe(), nil
	}
}

// Describe says what the check found, in words.
func (r ConditionResult) Describe() string {
	switch r.Condition {
	case ConditionPresent:
		return fmt.Sprintf("%s still present on %s (value %g, threshold %g)", r.Key, r.ResourceID, r.Value, r.Threshold)
	case ConditionUnknown:
		return fmt.Sprintf("%s on %s unknown: %s", r.Key, r.ResourceID, r.Reason)
	}
	return fmt.Sprintf("%s cleared on %s", r.Key, r.ResourceID)
}

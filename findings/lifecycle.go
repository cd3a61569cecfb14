package findings

import (
	"fmt"
	"time"

	"github.com/patrold/patrold/model/prompt"
)

// Observation is one detection of a finding in a run: by the model through
// report_finding or by the daemon from an unmatched signal. Text fields are
// payload only; identity comes from ResourceID, Category and Key.
//
// Every field that carries outside text (a source's names and tags, a
// detector's or a model's words) is a prompt.Text: it holds only what
// the one sanitiser made, and a raw string does not compile into it
// (docs/FINDINGS.md#lists-sources-and-outside-text). ResourceID is identity and is checked
// at decode (snapshot.IDProblem) instead.
type Observation struct {
	Key            string
	ResourceID     string
	ResourceKind   string
	ResourceName   prompt.Text
	ResourceNode   prompt.Text
	ResourceTags   []prompt.Text
	Category       Category
	Severity       Severity
	Source         Source
	Title          prompt.Text
	Description    prompt.Text
	Recommendation prompt.Text
	Evidence       prompt.Text
	// InhibitedBy is the id of the parent finding that explains this one
	// (Inhibit), or "".
	InhibitedBy string
}

// Normalize canonicalises the identity fields of o and returns its id.
func (o *Observation) Normalize() string {
	o.normalize()
	return ID(o.ResourceID, o.Category, o.Key)
}

// normalize canonicalises the identity fields of o. It does not hash
// them: a caller that needs no id spends no hash and no allocation.
func (o *Observation) normalize() {
	o.Key = NormalizeKey(o.Key)
	o.Category = NormalizeCategory(string(o.Category))
	if !o.Severity.Valid() {
		o.Severity = SeverityWarning
	}
}

// ChangeKind says what a run did to a finding (run report "change").
type ChangeKind string

// Change kinds.
const (
	ChangeNew       ChangeKind = "new"
	ChangeUpdated   ChangeKind = "updated"
	ChangeUnchanged ChangeKind = "unchanged"
	ChangeResolved  ChangeKind = "resolved"
	ChangeReopened  ChangeKind = "reopened"
)

// Change is the effect of a run on one finding.
type Change struct {
	Finding  Finding
	Kind     ChangeKind
	Previous *Finding // nil for a new finding
	Quiet    bool     // dismissed or suppressed finding seen at the same or lower severity
}

// Event is one entry of a finding's lifecycle history.
type Event struct {
	FindingID string    `json:"finding_id"`
	At        time.Time `json:"at"`
	Kind      string    `json:"kind"`
	Detail    string    `json:"detail,omitempty"`
	RunID     string    `json:"run_id,omitempty"`
}

// MaxEventsPerFinding bounds the lifecycle history kept per finding; the
// oldest events are dropped first.
const MaxEventsPerFinding = 50

// Observe applies one detection to the existing finding (nil when none) and
// returns the new state and the change. It is pure: now and runID are inputs.
//
// A re-detection is the steady run's common case, so:
//   - it hashes no id (the existing finding has it);
//   - it builds the new state in the result, copying existing once
//     there and once into Previous;
//   - it keeps the existing tags slice when the observed tags are the
//     same strings.
func Observe(existing *Finding, o Observation, now time.Time, runID string) (c Change) {
	o.normalize()
	if existing == nil {
		c.Kind = ChangeNew
		c.Finding = Finding{
			ID: ID(o.ResourceID, o.Category, o.Key), Key: o.Key, ResourceID: o.ResourceID, ResourceKind: o.ResourceKind,
			ResourceName: o.ResourceName.String(), ResourceNode: o.ResourceNode.String(), ResourceTags: prompt.Strings(o.ResourceTags),
			Category: o.Category, Severity: o.Severity, Source: o.Source, Status: StatusActive,
			DetectedAt: now, LastSeenAt: now, TimesRaised: 1, LastRunID: runID,
		}
		f := &c.Finding
		setText(f, &o)
		f.InhibitedBy = o.InhibitedBy
		f.Transitions = []time.Time{now}
		return c
	}
	prev := new(Finding)
	*prev = *existing
	c.Finding, c.Previous = *existing, prev
	f := &c.Finding
	f.LastSeenAt, f.LastRunID = now, runID
	f.TimesRaised++
	f.InhibitedBy = o.InhibitedBy
	if !o.ResourceNode.Empty() {
		f.ResourceNode = o.ResourceNode.String()
	}
	if !o.ResourceName.Empty() {
		f.ResourceName = o.ResourceName.String()
	}
	if o.ResourceKind != "" {
		f.ResourceKind = o.ResourceKind
	}
	if o.ResourceTags != nil && !sameTags(f.ResourceTags, o.ResourceTags) {
		f.ResourceTags = prompt.Strings(o.ResourceTags)
	}
	if f.Status == StatusResolved {
		f.Status = StatusActive
		f.ResolvedAt, f.ResolveReason, f.ResolveNote = nil, "", ""
		f.RegressionCount++
		if f.FixSummary != "" {
			f.PreviousFixSummary = f.FixSummary
		}
		f.Investigation = Investigation{PreviousFixSummary: f.PreviousFixSummary}
		f.Severity = o.Severity
		f.Transitions = append(f.Transitions, now)
		setText(f, &o)
		c.Kind = ChangeReopened
		return c
	}
	quietable := f.Suppressed || f.DismissedReason != ""
	if quietable {
		if o.Severity.Rank() <= f.Severity.Rank() {
			f.SeenWhileSuppressed++
			c.Kind, c.Quiet = ChangeUnchanged, true
			return c
		}
		// Re-detected at a higher severity: reactivate.
		f.Suppressed, f.DismissedReason, f.DismissedAt = false, "", nil
	}
	setText(f, &o)
	if o.Severity != f.Severity {
		f.Severity = o.Severity
		c.Kind = ChangeUpdated
		return c
	}
	c.Kind = ChangeUnchanged
	return c
}

// sameTags reports whether have (a non-nil slice) holds the strings of
// tags in order. A nil have is never the same: the observed tags replace
// it with a non-nil slice.
func sameTags(have []string, tags []prompt.Text) bool {
	if have == nil || len(have) != len(tags) {
		return false
	}
	for i := range tags {
		if have[i] != tags[i].String() {
			return false
		}
	}
	return true
}

func setText(f *Finding, o *Observation) {
	if !o.Title.Empty() {
		f.Title = o.Title.String()
	}
	if !o.Description.Empty() {
		f.Description = o.Description.String()
	}
	if !o.Recommendation.Empty() {
		f.Recommendation = o.Recommendation.String()
	}
	if !o.Evidence.Empty() {
		f.Evidence = o.Evidence.String()
	}
}

// Resolution reasons.
const (
	ResolveConditionCleared = "condition_cleared"
	ResolveAbsent           = "absent_in_complete_run"
	ResolveResourceGone     = "resource_gone"
	ResolveModelVerdict     = "model_verdict_confirmed"
	// ResolveNotConfirmed: a model finding under a key of its own that a
	// present verdict did not re-ground (docs/MODEL_STAGES.md).
	ResolveNotConfirmed = "not_confirmed"
	ResolveOperator     = "operator"
	ResolveFixVerified  = "fix_verified"
)

// Resolve marks an active finding resolved for reason at now.
func Resolve(existing Finding, reason, note string, now time.Time, runID string) Change {
	prev := existing
	f := existing
	f.Status = StatusResolved
	t := now
	f.ResolvedAt, f.ResolveReason, f.ResolveNote = &t, reason, note
	f.InhibitedBy = "" // a resolved finding is explained by nothing
	if runID != "" {
		f.LastRunID = runID
	}
	f.Transitions = append(f.Transitions, now)
	return Change{Finding: f, Kind: ChangeResolved, Previous: &prev}
}

// EventFor renders the lifecycle event of a change, or "" for none.
func EventFor(c Change) (kind, detail string) {
	switch c.Kind {
	case ChangeNew:
		return "detected", fmt.Sprintf("%s by %s", c.Finding.Severity, c.Finding.Source)
	case ChangeReopened:
		return "reopened", fmt.Sprintf("regression %d", c.Finding.RegressionCount)
	case ChangeResolved:
		return "resolved", c.Finding.ResolveReason
	case ChangeUpdated:
		if c.Previous != nil && c.Previous.Severity != c.Finding.Severity {
			return "severity_changed", fmt.Sprintf("%s -> %s", c.Previous.Severity, c.Finding.Severity)
		}
		if c.Previous != nil && (c.Previous.Suppressed || c.Previous.DismissedReason != "") {
			return "reactivated", "re-detected at higher severity"
		}
	}
	return "", ""
}

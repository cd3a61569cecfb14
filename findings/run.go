package findings

import (
	"crypto/rand"
	"encoding/json"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/patrold/patrold/snapshot"
)

// RunRecord is the stored record of one patrol run.
type RunRecord struct {
	ID         string          `json:"run_id"`
	Trigger    string          `json:"trigger"`
	Status     string          `json:"status"`
	Analysis   string          `json:"analysis"`
	StartedAt  time.Time       `json:"started_at"`
	FinishedAt *time.Time      `json:"finished_at,omitempty"`
	Complete   bool            `json:"complete"`
	Report     json.RawMessage `json:"report,omitempty"`
	// Exchange is the run's recorded model exchange (for replay); CostUSD
	// what the model calls cost (the spend ledger).
	Exchange json.RawMessage `json:"-"`
	CostUSD  float64         `json:"cost_usd,omitempty"`
	// Summary is what run lists show without reading the report.
	Summary *RunSummary `json:"summary,omitempty"`
}

// OutboxDraft is an event to write to the outbox; the store gives it an id
// and a time.
type OutboxDraft struct {
	Subject    string
	Type       string
	ResourceID string
	Data       any
}

// RunInput is what a run hands the store to reconcile in one transaction.
type RunInput struct {
	RunID        string
	Now          time.Time
	Observations []Observation
	// Check says what this run knows about an active finding it did not
	// observe: whether its resource was present, and whether a
	// deterministic detector for its key had the data to decide.
	Check func(f *Finding) Check
	// Complete: collection completed with no errors and no invalid
	// resources. Only a complete run resolves by absence.
	Complete bool
	// Reconcile false records the run without resolving anything (errored
	// runs never resolve).
	Reconcile bool
	// Resolve resolves active findings by id with the given reason (a
	// model "resolved" verdict the deterministic check confirmed). Ignored
	// for findings observed in this run and for those whose condition this
	// run detected (CheckDetected).
	Resolve map[string]string
	Policy  PublishPolicy
	// InScope, when set, is the scope of a scoped run: an active finding
	// whose resource (canonical id) it refuses is left as it is, never
	// resolved, whatever the snapshot lacks.
	InScope func(resourceID string) bool
	// Holds, when set, is the id of this run's parent finding that
	// explains f, an active finding it did not observe and keeps open
	// (Holder); "" when none does.
	Holds func(f *Finding) string
}

// Hold is the change that records what holds f, an active finding this
// run did not observe and keeps open: its InhibitedBy set to Holds' id,
// or cleared when nothing holds it any more. ok is false when there is
// nothing to record (nothing held it and nothing does). A held finding's
// change is written every run, so its parent counts it.
func (in RunInput) Hold(f Finding) (Change, bool) {
	if in.InScope != nil && !in.InScope(snapshot.CanonicalID(f.ResourceID)) {
		return Change{}, false
	}
	by := ""
	if in.Holds != nil {
		by = in.Holds(&f)
	}
	if by == "" && f.InhibitedBy == "" {
		return Change{}, false
	}
	prev := f
	f.InhibitedBy = by
	return Change{Finding: f, Kind: ChangeUnchanged, Previous: &prev}, true
}

// FinishFunc completes the run record from the changes, inside the
// transaction, and returns extra outbox events (run completed, remediation
// requests) to write with it.
type FinishFunc func(changes []Change) (RunRecord, []OutboxDraft, error)

// NewID returns a new ULID string.
func NewID(now time.Time) string {
	return ulid.MustNew(ulid.Timestamp(now), rand.Reader).String()
}

// RunSummary is a run's duration, reasons and counts, stored beside the
// report so lists never read reports.
type RunSummary struct {
	DurationMS       int64    `json:"duration_ms"`
	StatusReasons    []string `json:"status_reasons"`
	Resources        int      `json:"resources"`
	InvalidResources int      `json:"invalid_resources"`
	Signals          int      `json:"signals"`
	Findings         int      `json:"findings"`
	Resolved         int      `json:"resolved"`
	Errors           int      `json:"errors"`
	// SourceRequests is the report's source_requests: what the run
	// cost the cluster it watches.
	SourceRequests int `json:"source_requests,omitempty"`
}

// Resolution decides whether an active finding that was not observed this
// run resolves, and why ("" keeps it open).
func (in RunInput) Resolution(f *Finding) string {
	//mutate:scope-resolves-nothing-else ./patrol ^TestScopedRun
	if in.InScope != nil && !in.InScope(snapshot.CanonicalID(f.ResourceID)) {
		return "" // outside a scoped run: this run knows nothing of it
	}
	check := CheckAbsent
	if in.Check != nil {
		check = in.Check(f)
	}
	//mutate:detected-never-resolves ./findings,./store ^(TestRunInputResolution|TestDetectedConditionIsNeverResolved)$
	if check == CheckDetected {
		// The net has the last word: a condition detected in this run
		// keeps its finding open, whatever a model verdict says.
		return ""
	}
	if in.Resolve[f.ID] == ResolveNotConfirmed {
		// A model finding whose present verdict was not re-grounded: the
		// reason says so rather than its absence.
		return ResolveNotConfirmed
	}
	switch check {
	case CheckAbsent:
		if in.Complete {
			return ResolveResourceGone
		}
	case CheckCleared:
		return ResolveConditionCleared
	case CheckPresent:
		if in.Complete && (f.Category == CategoryPerformance || f.Category == CategoryCapacity) {
			return ResolveAbsent
		}
	}
	return in.Resolve[f.ID] // a confirmed model verdict, or ""
}

// Check is what a run knows about an unobserved active finding.
type Check int

// Checks, from least to most knowledge.
const (
	// CheckAbsent: the resource was not in the snapshot (or was invalid).
	CheckAbsent Check = iota
	// CheckUnknown: the resource was present but the detector for the
	// finding's key lacked data (missing metric, stale metrics): keep open.
	CheckUnknown
	// CheckPresent: present; no detector is authoritative for the key.
	CheckPresent
	// CheckCleared: a detector for the key evaluated fresh data and found
	// the condition below its clear threshold.
	CheckCleared
	// CheckDetected: this run's detection produced the finding's signal:
	// the finding stays open, and no verdict can resolve it.
	CheckDetected
)

// FindingEvent is the outbox event publishing decision d of f.
func FindingEvent(f *Finding, d Decision, runID string, now time.Time) OutboxDraft {
	subject, typ := FindingSubject(d.Event, f.Severity)
	return OutboxDraft{Subject: subject, Type: typ, ResourceID: f.ResourceID, Data: NewFindingEventData(f, d.Reason, runID, now)}
}

package findings

import "time"

// FindingEventData is the data of a finding event on NATS. It holds the
// finding and the run that caused the event (absent for events of the
// sweep or of an operator action). It says why it was published, and
// which occurrence of the finding this is. docs/NATS.md shows it;
// docs/schemas holds its schema.
type FindingEventData struct {
	Finding EventFinding `json:"finding"`
	RunID   string       `json:"run_id,omitempty"`
	Reason  string       `json:"reason"`
	// Recurrence counts the finding's occurrences: 1 when first opened,
	// 2 after its first regression (reopened), and so on.
	Recurrence int `json:"recurrence"`
}

// EventFinding is the finding as a finding event carries it: the run
// report's fields plus its text, evidence and lifecycle times.
type EventFinding struct {
	ID           string `json:"id"`
	Key          string `json:"key"`
	ResourceID   string `json:"resource_id"`
	ResourceKind string `json:"resource_kind,omitempty"`
	ResourceName string `json:"resource_name,omitempty"`
	// Node is the node of the resource (its own name for a node), when
	// it has one.
	Node            string     `json:"node,omitempty"`
	Category        Category   `json:"category"`
	Severity        Severity   `json:"severity"`
	State           string     `json:"state"`
	Status          Status     `json:"status"`
	Source          Source     `json:"source"`
	Title           string     `json:"title"`
	Description     string     `json:"description"`
	Recommendation  string     `json:"recommendation"`
	Evidence        string     `json:"evidence"`
	DetectedAt      time.Time  `json:"detected_at"`
	LastSeenAt      time.Time  `json:"last_seen_at"`
	ResolvedAt      *time.Time `json:"resolved_at,omitempty"`
	ResolveReason   string     `json:"resolve_reason,omitempty"`
	TimesRaised     int        `json:"times_raised"`
	RegressionCount int        `json:"regression_count"`
	Flapping        bool       `json:"flapping,omitempty"`
	// Inhibits counts the findings this one explains (held, not
	// published, while it is active).
	Inhibits int `json:"inhibits,omitempty"`
}

// NewFindingEventData is the event data for f published for reason.
func NewFindingEventData(f *Finding, reason, runID string, now time.Time) FindingEventData {
	return FindingEventData{
		Finding: EventFinding{
			ID: f.ID, Key: f.Key, ResourceID: f.ResourceID, ResourceKind: f.ResourceKind, ResourceName: f.ResourceName, Node: f.ResourceNode,
			Category: f.Category, Severity: f.Severity, State: LoopStateAt(f, now), Status: f.Status, Source: f.Source,
			Title: f.Title, Description: f.Description, Recommendation: f.Recommendation, Evidence: f.Evidence,
			DetectedAt: f.DetectedAt.UTC(), LastSeenAt: f.LastSeenAt.UTC(), ResolvedAt: utcPtr(f.ResolvedAt), ResolveReason: f.ResolveReason,
			TimesRaised: f.TimesRaised, RegressionCount: f.RegressionCount, Flapping: f.Flapping, Inhibits: f.Inhibits,
		},
		RunID: runID, Reason: reason, Recurrence: f.RegressionCount + 1,
	}
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

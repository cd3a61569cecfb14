package notify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
)

// findingEvent is a decoded finding lifecycle event.
type findingEvent struct {
	Event   *contracts.Event
	Kind    string // a contracts.FindingEvent
	Finding findings.FindingEventData
}

// ended reports whether the event ends the finding's alert: it resolved,
// or it is suppressed or dismissed (whatever the event says, the finding's
// own state decides).
func (e *findingEvent) ended() bool {
	f := &e.Finding.Finding
	return e.Kind == string(contracts.FindingResolved) || e.Kind == string(contracts.FindingSuppressed) || e.Kind == string(contracts.FindingDismissed) ||
		f.Status == findings.StatusResolved || f.State == findings.StateSuppressed || f.State == findings.StateDismissed
}

// shownAgain reports whether the event brings back a finding whose alert
// had ended: it reopened, or an operator undid a dismissal or suppression.
func (e *findingEvent) shownAgain() bool {
	switch contracts.FindingEvent(e.Kind) {
	case contracts.FindingReopened, contracts.FindingUndismissed, contracts.FindingUnsuppressed:
		return true
	}
	return false
}

// decodeFindingEvent decodes a structured CloudEvent carrying a finding.
// The payload is read leniently (a newer publisher may add fields) but
// every field an alert is built from is checked, naming it.
func decodeFindingEvent(raw []byte) (*findingEvent, error) {
	ev, err := contracts.DecodeEvent(raw)
	if err != nil {
		return nil, err
	}
	kind, ok := strings.CutPrefix(ev.Type, contracts.TypeFindingPrefix)
	if !ok || !contracts.FindingEvent(kind).Valid() {
		return nil, fmt.Errorf("type: %q is not a finding event (%s<%v>)", ev.Type, contracts.TypeFindingPrefix, contracts.FindingEvents)
	}
	out := &findingEvent{Event: ev, Kind: kind}
	dec := json.NewDecoder(bytes.NewReader(ev.Data))
	if err := dec.Decode(&out.Finding); err != nil {
		return nil, fmt.Errorf("data: %v", err)
	}
	f := &out.Finding.Finding
	switch {
	case f.ID != findings.ID(f.ResourceID, f.Category, f.Key):
		return nil, fmt.Errorf("data.finding.id: %q is not the identity of resource_id, category and key", f.ID)
	case f.ResourceID == "":
		return nil, errors.New("data.finding.resource_id: required")
	case f.Key == "":
		return nil, errors.New("data.finding.key: required")
	case !f.Severity.Valid():
		return nil, fmt.Errorf("data.finding.severity: %q is not one of %v", f.Severity, contracts.Severities)
	case findings.NormalizeCategory(string(f.Category)) != f.Category:
		return nil, fmt.Errorf("data.finding.category: %q is not one of %v", f.Category, contracts.Categories)
	case f.Status != findings.StatusActive && f.Status != findings.StatusResolved:
		return nil, fmt.Errorf("data.finding.status: %q is not active or resolved", f.Status)
	case f.DetectedAt.IsZero():
		return nil, errors.New("data.finding.detected_at: required")
	case ev.Subject != "" && ev.Subject != f.ResourceID:
		return nil, fmt.Errorf("subject: %q differs from data.finding.resource_id %q", ev.Subject, f.ResourceID)
	}
	return out, nil
}

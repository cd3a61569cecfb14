package findings

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Action is an operator action on a finding.
type Action string

// Operator actions.
const (
	ActionAcknowledge Action = "ack"
	ActionSnooze      Action = "snooze"
	ActionDismiss     Action = "dismiss"
	ActionUndismiss   Action = "undismiss"
	ActionSuppress    Action = "suppress"
	ActionUnsuppress  Action = "unsuppress"
	ActionResolve     Action = "resolve"
)

// Actions lists every operator action.
var Actions = []Action{ActionAcknowledge, ActionSnooze, ActionDismiss, ActionUndismiss, ActionSuppress, ActionUnsuppress, ActionResolve}

// Dismiss reasons.
const (
	DismissNotAnIssue       = "not_an_issue"
	DismissExpectedBehavior = "expected_behavior"
	DismissWillFixLater     = "will_fix_later"
)

// DismissReasons lists the reasons dismiss accepts.
var DismissReasons = []string{DismissNotAnIssue, DismissExpectedBehavior, DismissWillFixLater}

// Snooze bounds and the will_fix_later reminder.
const (
	MinSnooze          = time.Hour
	MaxSnooze          = 168 * time.Hour
	WillFixLaterRemind = 7 * 24 * time.Hour
)

// InputError is bad input to an action, naming the field.
type InputError struct {
	Field   string
	Problem string
}

func (e *InputError) Error() string { return e.Field + ": " + e.Problem }

// ActionRequest is one operator action with its parameters.
type ActionRequest struct {
	Action Action        `json:"action"`
	For    time.Duration `json:"-"`      // snooze duration
	Reason string        `json:"reason"` // dismiss reason
	Note   string        `json:"note"`   // resolve note
	Actor  string        `json:"actor"`  // who did it (token name or "cli")
}

// ApplyAction applies an operator action to f at now. It is pure: it
// returns the new finding, the lifecycle event and the publication (if any)
// or an error (*InputError, or ErrActionNotAllowed). An action that
// changes nothing (a second acknowledgement) returns an event without a
// Kind.
func ApplyAction(f Finding, req ActionRequest, now time.Time) (Finding, Event, *Decision, error) {
	notAllowed := func(why string) (Finding, Event, *Decision, error) {
		return f, Event{}, nil, fmt.Errorf("%s on finding %s: %s: %w", req.Action, f.ID, why, ErrActionNotAllowed)
	}
	ev := Event{FindingID: f.ID, At: now, Kind: string(req.Action)}
	actor := ""
	if req.Actor != "" {
		actor = " by " + req.Actor
	}
	var pub *Decision
	switch req.Action {
	case ActionAcknowledge:
		if !f.Active() {
			return notAllowed("the finding is resolved")
		}
		if f.AcknowledgedAt != nil {
			// Idempotent: the first acknowledgement stands, nothing is
			// recorded again.
			return f, Event{}, nil, nil
		}
		t := now
		f.AcknowledgedAt = &t
		ev.Kind, ev.Detail = "acknowledged", "acknowledged"+actor
	case ActionSnooze:
		if !f.Active() {
			return notAllowed("the finding is resolved")
		}
		if req.For < MinSnooze || req.For > MaxSnooze {
			return f, Event{}, nil, &InputError{Field: "for", Problem: fmt.Sprintf("%s is outside %s..%s", req.For, MinSnooze, MaxSnooze)}
		}
		t := now.Add(req.For)
		f.SnoozedUntil = &t
		ev.Kind, ev.Detail = "snoozed", fmt.Sprintf("until %s%s", t.UTC().Format(time.RFC3339), actor)
	case ActionDismiss:
		if !slices.Contains(DismissReasons, req.Reason) {
			return f, Event{}, nil, &InputError{Field: "reason", Problem: fmt.Sprintf("%q is not one of %s", req.Reason, strings.Join(DismissReasons, ", "))}
		}
		if !f.Active() {
			return notAllowed("the finding is resolved")
		}
		t := now
		f.DismissedReason, f.DismissedAt = req.Reason, &t
		ev.Kind, ev.Detail = "dismissed", req.Reason+actor
		// Subscribers (an Alertmanager sink) end what they show for it.
		pub = &Decision{Publish: true, Event: EventDismissed, Reason: ReasonDismissed}
	case ActionUndismiss:
		if f.DismissedReason == "" {
			return notAllowed("the finding is not dismissed")
		}
		f.DismissedReason, f.DismissedAt = "", nil
		ev.Kind, ev.Detail = "undismissed", strings.TrimSpace(actor)
		// An active finding shown again: subscribers that ended its
		// alert for the dismissal raise it again.
		if f.Active() && !f.Suppressed {
			pub = &Decision{Publish: true, Event: EventUndismissed, Reason: ReasonUndismissed}
		}
	case ActionSuppress:
		if f.Suppressed {
			return notAllowed("the finding is already suppressed")
		}
		f.Suppressed = true
		ev.Kind, ev.Detail = "suppressed", fmt.Sprintf("rule %s/%s%s", f.ResourceID, f.Category, actor)
		pub = &Decision{Publish: true, Event: EventSuppressed, Reason: ReasonSuppressed}
	case ActionUnsuppress:
		if !f.Suppressed {
			return notAllowed("the finding is not suppressed")
		}
		f.Suppressed = false
		ev.Kind, ev.Detail = "unsuppressed", strings.TrimSpace(actor)
		if f.Active() && f.DismissedReason == "" {
			pub = &Decision{Publish: true, Event: EventUnsuppressed, Reason: ReasonUnsuppressed}
		}
	case ActionResolve:
		if !f.Active() {
			return notAllowed("the finding is already resolved")
		}
		if strings.TrimSpace(req.Note) == "" {
			return f, Event{}, nil, &InputError{Field: "note", Problem: "required"}
		}
		c := Resolve(f, ResolveOperator, req.Note, now, "")
		f = c.Finding
		ev.Kind, ev.Detail = "resolved", "operator"+actor+": "+req.Note
		pub = &Decision{Publish: true, Event: EventResolved, Reason: ReasonResolved}
	default:
		return f, Event{}, nil, &InputError{Field: "action", Problem: fmt.Sprintf("unknown action %q", req.Action)}
	}
	if pub != nil {
		t := now
		f.LastPublishedAt, f.LastPublishedSeverity, f.LastPublishedEvent = &t, f.Severity, pub.Event
	}
	return f, ev, pub, nil
}

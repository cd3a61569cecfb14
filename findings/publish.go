package findings

import (
	"slices"
	"time"

	"github.com/patrold/patrold/contracts"
)

// Publish reasons (docs/FINDINGS.md#publish-policy).
const (
	ReasonFirst           = "first"
	ReasonSeverityChanged = "severity_changed"
	ReasonRepeat          = "repeat_interval_elapsed"
	ReasonResolved        = "resolved"
	ReasonReopened        = "reopened"
	ReasonFlapping        = "flapping"
	// The reasons of operator actions that change what is published.
	ReasonDismissed    = "dismissed"
	ReasonSuppressed   = "suppressed"
	ReasonUndismissed  = "undismissed"
	ReasonUnsuppressed = "unsuppressed"
)

// Reasons lists every publish reason a finding event may carry.
var Reasons = []string{ReasonFirst, ReasonSeverityChanged, ReasonRepeat, ReasonResolved, ReasonReopened, ReasonFlapping,
	ReasonDismissed, ReasonSuppressed, ReasonUndismissed, ReasonUnsuppressed}

// Finding event names (the <event> of patrol.findings.<event>.<severity>).
const (
	EventOpened     = "opened"
	EventUpdated    = "updated"
	EventRepeated   = "repeated"
	EventResolved   = "resolved"
	EventReopened   = "reopened"
	EventSuppressed = "suppressed"
	EventDismissed  = "dismissed"
	// EventUndismissed and EventUnsuppressed announce an active finding
	// that an operator brought back.
	EventUndismissed  = "undismissed"
	EventUnsuppressed = "unsuppressed"
)

// Defaults of the publish policy.
const (
	DefaultRepeatInterval     = 4 * time.Hour
	DefaultFlapWindow         = 6 * time.Hour
	DefaultFlapMaxTransitions = 4
)

// PublishPolicy configures when lifecycle changes are published.
type PublishPolicy struct {
	RepeatInterval     time.Duration
	FlapWindow         time.Duration
	FlapMaxTransitions int
}

// DefaultPublishPolicy returns the documented defaults.
func DefaultPublishPolicy() PublishPolicy {
	return PublishPolicy{RepeatInterval: DefaultRepeatInterval, FlapWindow: DefaultFlapWindow, FlapMaxTransitions: DefaultFlapMaxTransitions}
}

// Decision is the outcome of the publish policy for one change.
type Decision struct {
	Publish bool
	Event   string
	Reason  string
}

// Decide applies the publish policy to a change at now. It is pure: the
// returned finding carries the updated publication record and flap state.
// A held finding (silenced, inhibited, quiet, dismissed or suppressed)
// is recorded but not published, except its resolution when
// subscribers saw it open (docs/FINDINGS.md#publish-policy).
func (p PublishPolicy) Decide(c Change, silenced bool, now time.Time) (Finding, Decision) {
	f := c.Finding
	f.Transitions = pruneTransitions(f.Transitions, now, p.FlapWindow)
	flappingNow := p.FlapMaxTransitions > 0 && len(f.Transitions) > p.FlapMaxTransitions
	var d Decision
	switch c.Kind {
	case ChangeNew:
		d = Decision{true, EventOpened, ReasonFirst}
	case ChangeReopened:
		d = Decision{true, EventReopened, ReasonReopened}
	case ChangeResolved:
		// Never announced, or already closed for subscribers: nothing to end.
		if announcedOpen(&f) {
			d = Decision{true, EventResolved, ReasonResolved}
		}
	case ChangeUpdated:
		if f.LastPublishedSeverity != "" && f.Severity != f.LastPublishedSeverity {
			d = Decision{true, EventUpdated, ReasonSeverityChanged}
		} else if f.LastPublishedSeverity == "" && f.Active() {
			d = Decision{true, EventOpened, ReasonFirst} // reactivated, never published before
		}
	case ChangeUnchanged:
		switch {
		case f.Active() && f.LastPublishedAt == nil:
			d = Decision{true, EventOpened, ReasonFirst} // never published (was silenced or quiet)
		//mutate:hold-end-reopens ./findings,./store ^(TestResolutionIsNeverHeld|TestSilenceReleasesWhatItHeld)$
		case f.Active() && f.LastPublishedEvent == EventResolved && !f.Flapping:
			// Reopened under a hold: subscribers still see it resolved.
			d = Decision{true, EventReopened, ReasonReopened}
		case f.Active() && f.LastPublishedSeverity != "" && f.LastPublishedSeverity != f.Severity:
			d = Decision{true, EventUpdated, ReasonSeverityChanged}
		case f.Active() && p.RepeatInterval > 0 && now.Sub(*f.LastPublishedAt) >= p.RepeatInterval:
			d = Decision{true, EventRepeated, ReasonRepeat}
		}
	}
	held := c.Quiet || silenced || f.Suppressed || f.DismissedReason != ""
	// Sinks showing it open would otherwise keep it open for a day.
	//mutate:resolution-not-held ./findings ^TestResolutionIsNeverHeld
	if c.Kind == ChangeResolved {
		held = false
	}
	if held {
		d = Decision{}
	}
	// Flapping: publish once with reason flapping, then stay quiet on
	// open/resolve transitions until the finding is stable for a window.
	transition := c.Kind == ChangeReopened || c.Kind == ChangeResolved
	switch {
	case flappingNow && !f.Flapping:
		f.Flapping = true
		if d.Publish {
			d.Reason = ReasonFlapping
		}
	case f.Flapping && transition && d.Publish:
		d = Decision{}
	case f.Flapping && !flappingNow && len(f.Transitions) == 0:
		f.Flapping = false
	}
	if d.Publish {
		t := now
		f.LastPublishedAt, f.LastPublishedSeverity, f.LastPublishedEvent = &t, f.Severity, d.Event
	}
	return f, d
}

// announcedOpen reports whether subscribers last saw f open: it was
// published, and its last event did not end it.
func announcedOpen(f *Finding) bool {
	if f.LastPublishedAt == nil || f.Suppressed || f.DismissedReason != "" {
		return false
	}
	switch f.LastPublishedEvent {
	case EventResolved, EventDismissed, EventSuppressed:
		return false
	}
	return true
}

// pruneTransitions keeps the times of ts inside the window before now,
// in order. It never writes to ts's array:
//   - when every time is kept, it returns ts itself, clipped (an append
//     to the result copies, so ts is not changed);
//   - otherwise it returns a new slice of exactly the kept times.
func pruneTransitions(ts []time.Time, now time.Time, window time.Duration) []time.Time {
	if window <= 0 {
		return nil
	}
	kept := 0
	for _, t := range ts {
		if now.Sub(t) < window {
			kept++
		}
	}
	if kept == len(ts) {
		return slices.Clip(ts)
	}
	out := make([]time.Time, 0, kept)
	for _, t := range ts {
		if now.Sub(t) < window {
			out = append(out, t)
		}
	}
	return out
}

// FindingSubject returns the subject (relative to the prefix) and the event
// type of a finding event.
func FindingSubject(event string, severity Severity) (subject, typ string) {
	// Spelled once, in package contracts.
	return contracts.FindingSubjectOf(contracts.FindingEvent(event), string(severity))
}

package findings_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
)

// TestResolutionIsNeverHeld: a hold (a silence, an ack, a snooze) never
// keeps subscribers that saw a finding open from seeing it resolve, and a
// finding reopened under a hold is announced again when the hold ends
// (docs/FINDINGS.md#publish-policy). Each row compares the whole decision
// and the whole finding.
func TestResolutionIsNeverHeld(t *testing.T) {
	p := findings.DefaultPublishPolicy()
	W := findings.SeverityWarning
	// shown is a finding subscribers last saw as event ev an hour ago.
	shown := func(status findings.Status, ev string) findings.Finding {
		f := eligible()
		f.Status = status
		f.LastPublishedAt, f.LastPublishedSeverity, f.LastPublishedEvent = ago(time.Hour), W, ev
		return f
	}
	resolved := findings.StatusResolved
	cases := []struct {
		name     string
		kind     findings.ChangeKind
		f        findings.Finding
		silenced bool
		want     findings.Decision
	}{
		{"resolves while silenced", findings.ChangeResolved, shown(resolved, findings.EventOpened), true,
			findings.Decision{Publish: true, Event: findings.EventResolved, Reason: findings.ReasonResolved}},
		{"resolves while silenced, acked and snoozed", findings.ChangeResolved, func() findings.Finding {
			f := shown(resolved, findings.EventRepeated)
			f.AcknowledgedAt, f.SnoozedUntil = ago(time.Minute), ago(-time.Hour)
			return f
		}(), true, findings.Decision{Publish: true, Event: findings.EventResolved, Reason: findings.ReasonResolved}},
		{"resolves while silenced, never shown", findings.ChangeResolved, func() findings.Finding {
			f := eligible()
			f.Status = resolved
			return f
		}(), true, findings.Decision{}},
		{"resolves again, subscribers saw it resolve", findings.ChangeResolved, shown(resolved, findings.EventResolved), true, findings.Decision{}},
		{"resolves while dismissed", findings.ChangeResolved, func() findings.Finding {
			f := shown(resolved, findings.EventDismissed)
			f.DismissedReason = findings.DismissNotAnIssue
			return f
		}(), false, findings.Decision{}},
		{"reopened under a silence that still holds", findings.ChangeUnchanged, shown(findings.StatusActive, findings.EventResolved), true, findings.Decision{}},
		{"reopened under a silence that ended", findings.ChangeUnchanged, shown(findings.StatusActive, findings.EventResolved), false,
			findings.Decision{Publish: true, Event: findings.EventReopened, Reason: findings.ReasonReopened}},
		{"open under a silence that ended, shown open", findings.ChangeUnchanged, shown(findings.StatusActive, findings.EventOpened), false, findings.Decision{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, d := p.Decide(findings.Change{Kind: c.kind, Finding: c.f}, c.silenced, now)
			want := c.f
			if c.want.Publish {
				at := now
				want.LastPublishedAt, want.LastPublishedSeverity, want.LastPublishedEvent = &at, want.Severity, c.want.Event
			}
			if d != c.want {
				t.Fatalf("decision %+v, want %+v", d, c.want)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("finding\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

package findings_test

import (
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
)

// TestPublishPolicy is the dedup table, in the manner of Alertmanager's
// dedup stage: each row is a change and what (if anything) is published.
func TestPublishPolicy(t *testing.T) {
	p := findings.DefaultPublishPolicy()
	published := func(sev findings.Severity, at time.Duration) findings.Finding {
		f := eligible()
		f.Severity = sev
		f.LastPublishedAt, f.LastPublishedSeverity = ago(at), sev
		return f
	}
	W, C := findings.SeverityWarning, findings.SeverityCritical
	cases := []struct {
		name     string
		change   findings.Change
		silenced bool
		event    string // "" = not published
		reason   string
	}{
		{"first detection", findings.Change{Kind: findings.ChangeNew, Finding: eligible()}, false, findings.EventOpened, findings.ReasonFirst},
		{"first detection while silenced", findings.Change{Kind: findings.ChangeNew, Finding: eligible()}, true, "", ""},
		{"unchanged inside repeat interval", findings.Change{Kind: findings.ChangeUnchanged, Finding: published(W, time.Hour)}, false, "", ""},
		{"unchanged after repeat interval", findings.Change{Kind: findings.ChangeUnchanged, Finding: published(W, 4*time.Hour)}, false, findings.EventRepeated, findings.ReasonRepeat},
		{"severity changed", findings.Change{Kind: findings.ChangeUpdated, Finding: func() findings.Finding { f := published(W, time.Minute); f.Severity = C; return f }()}, false, findings.EventUpdated, findings.ReasonSeverityChanged},
		{"text changed only", findings.Change{Kind: findings.ChangeUnchanged, Finding: func() findings.Finding { f := published(W, time.Minute); f.Title = "new words"; return f }()}, false, "", ""},
		{"resolved", findings.Change{Kind: findings.ChangeResolved, Finding: func() findings.Finding { f := published(W, time.Minute); f.Status = findings.StatusResolved; return f }()}, false, findings.EventResolved, findings.ReasonResolved},
		{"resolved, never published", findings.Change{Kind: findings.ChangeResolved, Finding: func() findings.Finding { f := eligible(); f.Status = findings.StatusResolved; return f }()}, false, "", ""},
		{"reopened", findings.Change{Kind: findings.ChangeReopened, Finding: published(W, 5*time.Hour)}, false, findings.EventReopened, findings.ReasonReopened},
		{"quiet (dismissed)", findings.Change{Kind: findings.ChangeUnchanged, Quiet: true, Finding: func() findings.Finding { f := published(W, 9*time.Hour); f.DismissedReason = "not_an_issue"; return f }()}, false, "", ""},
		{"silenced after publication", findings.Change{Kind: findings.ChangeUnchanged, Finding: published(W, 9*time.Hour)}, true, "", ""},
		{"silence expired, never published", findings.Change{Kind: findings.ChangeUnchanged, Finding: eligible()}, false, findings.EventOpened, findings.ReasonFirst},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, d := p.Decide(c.change, c.silenced, now)
			if d.Event != c.event || d.Reason != c.reason || d.Publish != (c.event != "") {
				t.Fatalf("got %+v, want event %q reason %q", d, c.event, c.reason)
			}
			if d.Publish && (f.LastPublishedAt == nil || !f.LastPublishedAt.Equal(now) || f.LastPublishedSeverity != f.Severity) {
				t.Fatalf("publication not recorded: %+v", f.Publication)
			}
		})
	}
}

func TestFlapping(t *testing.T) {
	p := findings.DefaultPublishPolicy()
	f := eligible()
	at := now
	var reasons []string
	kinds := []findings.ChangeKind{findings.ChangeNew}
	for i := 0; i < 7; i++ {
		if i%2 == 0 {
			kinds = append(kinds, findings.ChangeResolved)
		} else {
			kinds = append(kinds, findings.ChangeReopened)
		}
	}
	for _, k := range kinds {
		at = at.Add(10 * time.Minute)
		f.Transitions = append(f.Transitions, at)
		var d findings.Decision
		f, d = p.Decide(findings.Change{Kind: k, Finding: f}, false, at)
		if d.Publish {
			reasons = append(reasons, d.Reason)
		} else {
			reasons = append(reasons, "-")
		}
	}
	// 5 transitions exceed max 4: the 5th is published once with reason
	// flapping, later transitions are quiet.
	want := []string{"first", "resolved", "reopened", "resolved", "flapping", "-", "-", "-"}
	for i := range want {
		if reasons[i] != want[i] {
			t.Fatalf("publications %v, want %v", reasons, want)
		}
	}
	if !f.Flapping {
		t.Fatal("not marked flapping")
	}
	// Stable for a window: flapping clears and transitions publish again.
	at = at.Add(7 * time.Hour)
	f, _ = p.Decide(findings.Change{Kind: findings.ChangeUnchanged, Finding: f}, false, at)
	if f.Flapping {
		t.Fatal("still flapping after a stable window")
	}
}

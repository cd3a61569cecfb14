package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/store"
)

type pair struct{ resource, category string }

var (
	propResources = []string{"node/a", "node/b", "vm/1"}
	propKeys      = []struct{ key, category string }{{"high_cpu", "performance"}, {"high_memory", "performance"}, {"high_disk", "capacity"}, {"backup_stale", "backup"}}
	propSev       = []findings.Severity{findings.SeverityInfo, findings.SeverityWatch, findings.SeverityWarning, findings.SeverityCritical}
)

// TestLifecycleProperties drives random sequences of detections, clears,
// operator actions, investigations and clock advances through a real store
// and checks the lifecycle invariants after every step.
func TestLifecycleProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		dir, err := os.MkdirTemp("", "patrold-prop-")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(dir)
		ctx := context.Background()
		st, err := store.Open(ctx, filepath.Join(dir, "f.db"))
		if err != nil {
			rt.Fatal(err)
		}
		defer st.Close()
		gate := findings.DefaultGate()
		retention := 48 * time.Hour
		clock := now
		suppressedAt := map[pair]map[string]bool{} // pair -> ids that existed when suppressed
		lastEnd := map[string]time.Time{}          // finding -> end of last investigation
		lastOutcome := map[string]string{}
		episodeAttempts := map[string]int{}
		resolvedAt := map[string]time.Time{}
		draft := func(f *findings.Finding, attempt int, epoch uint64) findings.OutboxDraft {
			return findings.OutboxDraft{Subject: "remediation.requests", Type: "patrold.remediation.request", Data: attempt}
		}
		allIDs := func() []string {
			list, _ := st.List(ctx, findings.ListFilter{Status: "all"})
			var ids []string
			for _, f := range list {
				ids = append(ids, f.ID)
			}
			return ids
		}
		steps := rapid.IntRange(10, 80).Draw(rt, "steps")
		for step := 0; step < steps; step++ {
			switch op := rapid.IntRange(0, 5).Draw(rt, "op"); op {
			case 0, 1: // a run detecting a random subset (0) or every fault (1)
				var obs []findings.Observation
				for _, r := range propResources {
					for _, k := range propKeys {
						if op == 1 || rapid.Bool().Draw(rt, "present") {
							o := findings.Observation{Key: k.key, ResourceID: r, Category: findings.Category(k.category),
								Severity: rapid.SampledFrom(propSev).Draw(rt, "sev"), Source: findings.SourceDeterministic,
								Title: prompt.Safe(fmt.Sprintf("text %d", rapid.IntRange(0, 9).Draw(rt, "text")), 200)}
							obs = append(obs, o)
						}
					}
				}
				for _, c := range commit(rt, st, clock, rapid.Bool().Draw(rt, "complete"), obs...) {
					switch c.Kind {
					case findings.ChangeReopened:
						// A regression starts a new episode: investigation
						// fields reset (docs/FINDINGS.md).
						episodeAttempts[c.Finding.ID] = 0
						delete(lastEnd, c.Finding.ID)
						delete(resolvedAt, c.Finding.ID)
					case findings.ChangeResolved:
						resolvedAt[c.Finding.ID] = clock
					}
				}
			case 2: // an operator action on a random finding
				ids := allIDs()
				if len(ids) == 0 {
					continue
				}
				id := rapid.SampledFrom(ids).Draw(rt, "id")
				before, _ := st.Get(ctx, id)
				req := findings.ActionRequest{
					Action: rapid.SampledFrom(findings.Actions).Draw(rt, "action"),
					For:    time.Duration(rapid.IntRange(0, 200).Draw(rt, "hours")) * time.Hour,
					Reason: rapid.SampledFrom([]string{"not_an_issue", "expected_behavior", "will_fix_later", "bogus"}).Draw(rt, "reason"),
					Note:   rapid.SampledFrom([]string{"", "fixed"}).Draw(rt, "note"),
				}
				f, err := st.Act(ctx, id, req, clock)
				if err != nil {
					continue
				}
				p := pair{f.ResourceID, string(f.Category)}
				switch req.Action {
				case findings.ActionSuppress:
					set := map[string]bool{}
					for _, x := range allIDs() {
						set[x] = true
					}
					suppressedAt[p] = set
				case findings.ActionUnsuppress:
					delete(suppressedAt, p)
				case findings.ActionResolve:
					if before.Active() {
						resolvedAt[id] = clock
					}
				}
			case 3: // hand over to remediation
				got, err := st.RequestInvestigations(ctx, allIDs(), gate, findings.AutonomyFull, clock, draft)
				if err != nil {
					rt.Fatal(err)
				}
				for _, f := range got {
					episodeAttempts[f.ID]++
					if episodeAttempts[f.ID] > gate.MaxAttempts || f.Attempts > gate.MaxAttempts {
						rt.Fatalf("%s investigated %d times (max %d)", f.ID, f.Attempts, gate.MaxAttempts)
					}
					if end, ok := lastEnd[f.ID]; ok {
						cool := gate.Cooldown
						switch lastOutcome[f.ID] {
						case findings.OutcomeTimedOut:
							cool = gate.TimeoutCooldown
						case findings.OutcomeFixFailed, findings.OutcomeFixVerificationFailed:
							cool = gate.FixRetryCooldown
						}
						if clock.Sub(end) < cool {
							rt.Fatalf("%s investigated %s after its last ended (%s), inside cooldown %s", f.ID, clock.Sub(end), lastOutcome[f.ID], cool)
						}
					}
				}
			case 4: // an outcome for a running investigation
				running, _ := st.List(ctx, findings.ListFilter{Status: "all"})
				for _, f := range running {
					if f.InvestigationStatus != findings.InvestigationRunning {
						continue
					}
					// Mostly retryable outcomes, so attempt limits and
					// cooldowns are exercised.
					out := rapid.SampledFrom([]string{findings.OutcomeFixFailed, findings.OutcomeTimedOut, findings.OutcomeFixExecuted,
						findings.OutcomeFixFailed, findings.OutcomeTimedOut, findings.OutcomeFixExecuted,
						findings.OutcomeFixVerified, findings.OutcomeCannotFix, findings.OutcomeFixVerificationFailed}).Draw(rt, "outcome")
					o := findings.Outcome{FindingID: f.ID, SessionID: fmt.Sprintf("%s-%d", f.ID, f.Attempt), Attempt: f.Attempt, Outcome: out}
					startSession(rt, st, o, clock)
					ok, err := st.RecordOutcome(ctx, o, clock)
					if err != nil {
						rt.Fatal(err)
					}
					if ok {
						lastEnd[f.ID], lastOutcome[f.ID] = clock, out
						if out == findings.OutcomeFixVerified && f.Active() {
							resolvedAt[f.ID] = clock
						}
					}
				}
			case 5: // time passes; housekeeping runs
				// Steps around the cooldown edges (10 min, 20 min, 1 h).
				clock = clock.Add(time.Duration(rapid.SampledFrom([]int{1, 5, 9, 11, 15, 19, 21, 30, 59, 61, 120}).Draw(rt, "minutes")) * time.Minute)
				st.RecoverStuck(ctx, gate, clock)
				if _, err := st.Sweep(ctx, clock, retention, findings.DefaultPublishPolicy()); err != nil {
					rt.Fatal(err)
				}
			}
			checkInvariants(rt, st, suppressedAt, resolvedAt, clock, retention)
		}
	})
}

func checkInvariants(rt *rapid.T, st *store.Store, suppressedAt map[pair]map[string]bool, resolvedAt map[string]time.Time, clock time.Time, retention time.Duration) {
	ctx := context.Background()
	list, err := st.List(ctx, findings.ListFilter{Status: "all"})
	if err != nil {
		rt.Fatal(err)
	}
	ids := map[string]bool{}
	facts := map[string]bool{}
	for _, f := range list {
		if ids[f.ID] {
			rt.Fatalf("duplicate id %s", f.ID)
		}
		ids[f.ID] = true
		fact := f.ResourceID + ":" + string(f.Category) + ":" + f.Key
		if facts[fact] || f.ID != findings.ID(f.ResourceID, f.Category, f.Key) {
			rt.Fatalf("identity broken for %s (%s)", f.ID, fact)
		}
		facts[fact] = true
		if set, ok := suppressedAt[pair{f.ResourceID, string(f.Category)}]; ok && !set[f.ID] {
			rt.Fatalf("new finding %s created for suppressed pair %s/%s", f.ID, f.ResourceID, f.Category)
		}
	}
	for id, at := range resolvedAt {
		if clock.Sub(at) < retention && !ids[id] {
			rt.Fatalf("finding %s resolved %s ago was deleted inside retention %s", id, clock.Sub(at), retention)
		}
	}
}

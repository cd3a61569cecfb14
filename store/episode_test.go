package store_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store"
)

// TestReopenedFindingStartsNewEpisode: after a fix the finding reopens.
// Its new request carries an attempt of its own, never the previous
// episode's. A replayed outcome of the previous episode is not taken as
// this one's; the new outcome is. The finding does not stay
// investigating.
func TestReopenedFindingStartsNewEpisode(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	gate := findings.DefaultGate()
	var requested []int
	draft := func(f *findings.Finding, attempt int, epoch uint64) findings.OutboxDraft {
		requested = append(requested, attempt)
		return findings.OutboxDraft{Subject: "remediation.requests", Type: "patrold.remediation.request", ResourceID: f.ResourceID,
			Data: map[string]any{"finding_id": f.ID, "attempt": attempt}}
	}
	id := commit(t, st, now, true, fobs("node/a", "high_cpu", "warning", "x"))[0].Finding.ID
	if got, err := st.RequestInvestigations(ctx, []string{id}, gate, findings.AutonomyFull, now, draft); err != nil || len(got) != 1 {
		t.Fatalf("first request: %v %v", got, err)
	}
	fixed := findings.Outcome{FindingID: id, SessionID: "s1", Attempt: 1, Outcome: findings.OutcomeFixVerified, Summary: "restarted"}
	startSession(t, st, fixed, now)
	if ok, err := st.RecordOutcome(ctx, fixed, now.Add(time.Minute)); !ok || err != nil {
		t.Fatalf("episode 1 outcome: %v %v", ok, err)
	}

	reopened := commit(t, st, now.Add(2*time.Hour), true, fobs("node/a", "high_cpu", "warning", "x"))[0]
	if reopened.Kind != findings.ChangeReopened {
		t.Fatalf("change %s, want reopened", reopened.Kind)
	}
	// The worker replays episode 1's outcome (a redelivered request): it
	// is not this episode's.
	if ok, err := st.RecordOutcome(ctx, fixed, now.Add(2*time.Hour+time.Minute)); ok || err != nil {
		t.Fatalf("replayed episode 1 outcome applied=%v err=%v before episode 2's request", ok, err)
	}
	at := now.Add(3 * time.Hour)
	got, err := st.RequestInvestigations(ctx, []string{id}, gate, findings.AutonomyFull, at, draft)
	if err != nil || len(got) != 1 {
		t.Fatalf("episode 2 request: %v %v", got, err)
	}
	if want := []int{1, 2}; !reflect.DeepEqual(requested, want) {
		t.Fatalf("request attempts %v, want %v (episode 2 continues the numbering)", requested, want)
	}
	if f := got[0]; f.Attempts != 1 || f.Attempt != 2 || f.InvestigationStatus != findings.InvestigationRunning {
		t.Fatalf("episode 2 running: %+v", f.Investigation)
	}
	if ok, err := st.RecordOutcome(ctx, fixed, at.Add(time.Minute)); ok || err != nil {
		t.Fatalf("replayed episode 1 outcome applied=%v err=%v during episode 2", ok, err)
	}
	failed := findings.Outcome{FindingID: id, SessionID: "s2", Attempt: 2, Outcome: findings.OutcomeFixFailed, Summary: "no luck"}
	startSession(t, st, failed, at)
	if ok, err := st.RecordOutcome(ctx, failed, at.Add(2*time.Minute)); !ok || err != nil {
		t.Fatalf("episode 2 outcome: %v %v", ok, err)
	}
	f, err := st.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if f.InvestigationStatus != "" || f.LastOutcome != findings.OutcomeFixFailed || f.Status != findings.StatusActive {
		t.Fatalf("after episode 2's outcome: status %s %+v", f.Status, f.Investigation)
	}
	recs, err := st.Investigations(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	end1, end2 := now.Add(time.Minute).UTC(), at.Add(2*time.Minute).UTC()
	want := []findings.InvestigationRecord{
		{FindingID: id, Attempt: 1, Episode: 1, SessionID: "s1", StartedAt: now.UTC(), EndedAt: &end1, Outcome: findings.OutcomeFixVerified, Summary: "restarted"},
		{FindingID: id, Attempt: 2, Episode: 2, SessionID: "s2", StartedAt: at.UTC(), EndedAt: &end2, Outcome: findings.OutcomeFixFailed, Summary: "no luck"},
	}
	if !reflect.DeepEqual(recs, want) {
		t.Fatalf("investigations\n%+v\nwant\n%+v", recs, want)
	}
}

// TestStuckRecoveryEndsEarlierEpisodes: an investigation still open when
// its finding resolved and reopened can get no outcome any more; stuck
// recovery ends it, and leaves the running one of the current episode
// alone until it is stuck itself.
func TestStuckRecoveryEndsEarlierEpisodes(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	gate := findings.DefaultGate()
	draft := func(f *findings.Finding, attempt int, epoch uint64) findings.OutboxDraft {
		return findings.OutboxDraft{Subject: "remediation.requests", Type: "patrold.remediation.request", ResourceID: f.ResourceID,
			Data: map[string]any{"finding_id": f.ID, "attempt": attempt}}
	}
	id := commit(t, st, now, true, fobs("node/b", "high_cpu", "warning", "x"))[0].Finding.ID
	if got, err := st.RequestInvestigations(ctx, []string{id}, gate, findings.AutonomyFull, now, draft); err != nil || len(got) != 1 {
		t.Fatalf("request: %v %v", got, err)
	}
	commit(t, st, now.Add(time.Minute), true, fobs("node/other", "high_cpu", "warning", "y")) // node/b resolves by absence
	commit(t, st, now.Add(2*time.Minute), true, fobs("node/b", "high_cpu", "warning", "x"))   // and reopens
	at := now.Add(3 * time.Minute)
	if got, err := st.RequestInvestigations(ctx, []string{id}, gate, findings.AutonomyFull, at, draft); err != nil || len(got) != 1 || got[0].Attempt != 2 {
		t.Fatalf("episode 2 request: %+v %v", got, err)
	}
	sweep := now.Add(gate.Timeout + findings.StuckGrace + 2*time.Minute) // episode 1's is stuck, episode 2's not yet
	stuck, err := st.RecoverStuck(ctx, gate, sweep)
	if err != nil || len(stuck) != 0 {
		t.Fatalf("recovered %v %v; the current episode's investigation is not stuck yet", stuck, err)
	}
	recs, err := st.Investigations(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	ended := sweep.UTC()
	want := []findings.InvestigationRecord{
		{FindingID: id, Attempt: 1, Episode: 1, StartedAt: now.UTC(), EndedAt: &ended, Outcome: findings.OutcomeTimedOut, Summary: "episode ended without an outcome"},
		{FindingID: id, Attempt: 2, Episode: 2, StartedAt: at.UTC()},
	}
	if !reflect.DeepEqual(recs, want) {
		t.Fatalf("investigations\n%+v\nwant\n%+v", recs, want)
	}
	f, _ := st.Get(ctx, id)
	if f.InvestigationStatus != findings.InvestigationRunning || f.Attempt != 2 {
		t.Fatalf("episode 2 no longer running: %+v", f.Investigation)
	}
}

// startSession records the session o reports from, as a worker does
// before it runs (an outcome applies only to a stored session).
func startSession(t fataler, st *store.Store, o findings.Outcome, at time.Time) {
	t.Helper()
	if err := st.StartSession(context.Background(), o.SessionID, o.FindingID, o.Attempt, "playbook", at); err != nil {
		t.Fatal(err)
	}
}

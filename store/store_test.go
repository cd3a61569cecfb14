package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/store"
)

func openStore(t testing.TB) *store.Store {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "f.db"))
}

// openAt opens the store at path, closed when the test ends; two calls on
// one path are two processes on one database.
func openAt(t testing.TB, path string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// commit files observations as one run at at; present resources are those
// observed (so others resolve only when complete).
// fataler is what commit needs of *testing.T and *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
}

func commit(t fataler, st *store.Store, at time.Time, complete bool, obs ...findings.Observation) []findings.Change {
	t.Helper()
	ch, err := commitRun(st, findings.NewID(at), at, complete, obs...)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// commitRun files observations as run runID at at (see commit).
func commitRun(st *store.Store, runID string, at time.Time, complete bool, obs ...findings.Observation) ([]findings.Change, error) {
	seen := map[string]bool{}
	for _, o := range obs {
		seen[o.ResourceID] = true
	}
	return st.CommitRun(context.Background(), findings.RunInput{
		RunID: runID, Now: at, Observations: obs, Complete: complete, Reconcile: true, Policy: findings.DefaultPublishPolicy(),
		Check: func(f *findings.Finding) findings.Check {
			if seen[f.ResourceID] {
				return findings.CheckCleared
			}
			return findings.CheckAbsent
		},
	}, func([]findings.Change) (findings.RunRecord, []findings.OutboxDraft, error) {
		return findings.RunRecord{ID: runID, Trigger: "manual", Status: "issues_found", Analysis: "deterministic", StartedAt: at}, nil, nil
	})
}

func fobs(resource, key string, sev findings.Severity, text string) findings.Observation {
	return findings.Observation{Key: key, ResourceID: resource, Category: "performance", Severity: sev, Source: findings.SourceDeterministic,
		Title: prompt.Safe(text, 4000), Description: prompt.Safe(text, 4000), Evidence: prompt.Safe(text, 4000), ResourceTags: prompt.SafeNames([]string{"prod"})}
}

func pendingByFinding(t *testing.T, st *store.Store) map[string]int {
	ev, err := st.PendingEvents(context.Background(), 10000)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, e := range ev {
		out[e.ResourceID+" "+e.Type]++
	}
	return out
}

func TestSameFaultsDifferentTextPublishOnce(t *testing.T) {
	st := openStore(t)
	commit(t, st, now, true, fobs("node/a", "high_cpu", "warning", "CPU is high"))
	commit(t, st, now.Add(10*time.Minute), true, fobs("node/a", "high_cpu", "warning", "the processor is very busy indeed"))
	commit(t, st, now.Add(20*time.Minute), true, fobs("node/a", "cpu-high", "warning", "yet another wording"))
	if got := pendingByFinding(t, st); got["node/a patrold.finding.opened"] != 1 || len(got) != 1 {
		t.Fatalf("publications: %v", got)
	}
	if n, _ := st.Count(context.Background()); n != 1 {
		t.Fatalf("%d findings", n)
	}
}

func TestSuppressionDropsNewFindings(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	ch := commit(t, st, now, true, fobs("node/a", "high_cpu", "warning", "x"))
	if _, err := st.Act(ctx, ch[0].Finding.ID, findings.ActionRequest{Action: findings.ActionSuppress}, now); err != nil {
		t.Fatal(err)
	}
	// A new key on the same resource+category is dropped; the suppressed
	// one is seen quietly; another category on the resource is filed.
	other := fobs("node/a", "load", "warning", "y")
	capacity := fobs("node/a", "high_disk", "warning", "z")
	capacity.Category = "capacity"
	ch = commit(t, st, now.Add(time.Hour), true, fobs("node/a", "high_cpu", "warning", "x"), other, capacity)
	if len(ch) != 2 {
		t.Fatalf("changes %d: %+v", len(ch), ch)
	}
	active, _ := st.Active(ctx)
	if len(active) != 2 {
		t.Fatalf("active %d", len(active))
	}
	sup, _ := st.Get(ctx, findings.ID("node/a", "performance", "high_cpu"))
	if !sup.Suppressed || sup.SeenWhileSuppressed != 1 {
		t.Fatalf("suppressed finding: %+v", sup)
	}
	// Higher severity reactivates.
	commit(t, st, now.Add(2*time.Hour), true, fobs("node/a", "high_cpu", "critical", "x"))
	sup, _ = st.Get(ctx, sup.ID)
	if sup.Suppressed || sup.Severity != "critical" {
		t.Fatalf("not reactivated: %+v", sup)
	}
}

func TestSilences(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	if _, err := st.AddSilence(ctx, findings.Silence{Matchers: findings.Matchers{}, Comment: "c", Author: "a", EndsAt: now.Add(time.Hour)}, now); err == nil {
		t.Fatal("a silence without matchers was accepted")
	}
	sil, err := st.AddSilence(ctx, findings.Silence{Matchers: findings.Matchers{Resource: "node/*", Tags: []string{"prod"}},
		Comment: "maintenance", Author: "ops", EndsAt: now.Add(2 * time.Hour)}, now)
	if err != nil {
		t.Fatal(err)
	}
	ch := commit(t, st, now.Add(time.Minute), true, fobs("node/a", "high_cpu", "warning", "x"), fobs("vm/1", "high_cpu", "warning", "x"))
	if !ch[0].Finding.Silenced || ch[1].Finding.Silenced {
		t.Fatalf("silenced flags: %v %v", ch[0].Finding.Silenced, ch[1].Finding.Silenced)
	}
	if got := pendingByFinding(t, st); got["node/a patrold.finding.opened"] != 0 || got["vm/1 patrold.finding.opened"] != 1 {
		t.Fatalf("publications while silenced: %v", got)
	}
	g := findings.DefaultGate()
	f, _ := st.Get(ctx, ch[0].Finding.ID)
	if ok, why := g.ShouldInvestigate(&f, findings.AutonomyFull, now); ok || why != findings.RefuseInactive {
		t.Fatalf("silenced finding passes the gate: %s", why)
	}
	// Expiry re-evaluates: the sweep publishes the never-published finding.
	if err := st.ExpireSilence(ctx, sil.ID, now.Add(30*time.Minute)); err != nil {
		t.Fatal(err)
	}
	res, err := st.Sweep(ctx, now.Add(31*time.Minute), 720*time.Hour, findings.DefaultPublishPolicy())
	if err != nil || res.Unsilenced != 1 {
		t.Fatalf("sweep: %+v %v", res, err)
	}
	if got := pendingByFinding(t, st); got["node/a patrold.finding.opened"] != 1 {
		t.Fatalf("after expiry: %v", got)
	}
	if err := st.ExpireSilence(ctx, sil.ID, now.Add(time.Hour)); !errors.Is(err, findings.ErrNotFound) {
		t.Fatalf("expiring an expired silence: %v", err)
	}
}

func TestRetentionAndReminder(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	ch := commit(t, st, now, true, fobs("node/a", "high_cpu", "warning", "x"), fobs("node/b", "high_cpu", "warning", "x"), fobs("node/c", "high_cpu", "warning", "x"))
	if _, err := st.Act(ctx, ch[2].Finding.ID, findings.ActionRequest{Action: findings.ActionDismiss, Reason: findings.DismissWillFixLater}, now); err != nil {
		t.Fatal(err)
	}
	commit(t, st, now.Add(time.Hour), true, fobs("node/b", "high_cpu", "warning", "x"), fobs("node/c", "high_cpu", "warning", "x")) // node/a resolves
	pol := findings.DefaultPublishPolicy()
	if res, _ := st.Sweep(ctx, now.Add(29*24*time.Hour), 720*time.Hour, pol); res.Deleted != 0 {
		t.Fatalf("deleted inside retention: %+v", res)
	}
	c, _ := st.Get(ctx, ch[2].Finding.ID)
	if c.DismissedReason != "" {
		t.Fatalf("will_fix_later not lifted after 7 days: %+v", c.Operator)
	}
	res, _ := st.Sweep(ctx, now.Add(31*24*time.Hour), 720*time.Hour, pol)
	if res.Deleted != 1 {
		t.Fatalf("retention: %+v", res)
	}
	if _, err := st.Get(ctx, ch[0].Finding.ID); !errors.Is(err, findings.ErrNotFound) {
		t.Fatalf("resolved finding kept past retention: %v", err)
	}
}

func TestInvestigationLifecycle(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	ch := commit(t, st, now, true, fobs("node/a", "high_cpu", "warning", "x"), fobs("node/b", "high_cpu", "warning", "x"))
	ids := []string{ch[0].Finding.ID, ch[1].Finding.ID}
	gate := findings.DefaultGate()
	gate.MaxConcurrent = 1
	draft := func(f *findings.Finding, attempt int, epoch uint64) findings.OutboxDraft {
		return findings.OutboxDraft{Subject: "remediation.requests", Type: "patrold.remediation.request", ResourceID: f.ResourceID,
			Data: map[string]any{"finding_id": f.ID, "attempt": attempt}}
	}
	if got, _ := st.RequestInvestigations(ctx, ids, gate, findings.AutonomyMonitor, now, draft); len(got) != 0 {
		t.Fatal("monitor autonomy investigated")
	}
	got, err := st.RequestInvestigations(ctx, ids, gate, findings.AutonomyFull, now, draft)
	if err != nil || len(got) != 1 {
		t.Fatalf("max concurrent 1: %d %v", len(got), err)
	}
	if again, _ := st.RequestInvestigations(ctx, ids[:1], gate, findings.AutonomyFull, now, draft); len(again) != 0 {
		t.Fatal("a running investigation was requested twice")
	}
	// Stale attempt is ignored; the real outcome applies once.
	if ok, _ := st.RecordOutcome(ctx, findings.Outcome{FindingID: ids[0], Attempt: 7, Outcome: findings.OutcomeFixFailed}, now); ok {
		t.Fatal("stale attempt applied")
	}
	if _, err := st.RecordOutcome(ctx, findings.Outcome{FindingID: ids[0], Attempt: 1, Outcome: "made_up"}, now); err == nil {
		t.Fatal("unknown outcome accepted")
	}
	startSession(t, st, findings.Outcome{FindingID: ids[0], Attempt: 1, SessionID: "s1"}, now)
	if ok, err := st.RecordOutcome(ctx, findings.Outcome{FindingID: ids[0], Attempt: 1, Outcome: findings.OutcomeFixFailed, SessionID: "s1"}, now.Add(time.Minute)); !ok || err != nil {
		t.Fatalf("outcome: %v %v", ok, err)
	}
	if ok, _ := st.RecordOutcome(ctx, findings.Outcome{FindingID: ids[0], Attempt: 1, Outcome: findings.OutcomeFixFailed}, now.Add(time.Minute)); ok {
		t.Fatal("redelivered outcome applied twice")
	}
	// Inside the 20 min fix-retry cooldown nothing; after it, attempt 2.
	if got, _ := st.RequestInvestigations(ctx, ids[:1], gate, findings.AutonomyFull, now.Add(15*time.Minute), draft); len(got) != 0 {
		t.Fatal("requested inside the fix retry cooldown")
	}
	got, _ = st.RequestInvestigations(ctx, ids[:1], gate, findings.AutonomyFull, now.Add(22*time.Minute), draft)
	if len(got) != 1 || got[0].Attempts != 2 {
		t.Fatalf("retry: %+v", got)
	}
	// Stuck recovery after timeout + grace.
	if ids, _ := st.RecoverStuck(ctx, gate, now.Add(30*time.Minute)); len(ids) != 0 {
		t.Fatal("recovered too early")
	}
	stuck, _ := st.RecoverStuck(ctx, gate, now.Add(38*time.Minute))
	f, _ := st.Get(ctx, ids[0])
	if len(stuck) != 1 || f.LastOutcome != findings.OutcomeTimedOut || f.InvestigationStatus != "" {
		t.Fatalf("stuck: %v %+v", stuck, f.Investigation)
	}
	// fix_verified resolves.
	got, _ = st.RequestInvestigations(ctx, ids[:1], gate, findings.AutonomyFull, now.Add(49*time.Minute), draft)
	if len(got) != 1 {
		t.Fatal("retry after timeout cooldown")
	}
	startSession(t, st, findings.Outcome{FindingID: ids[0], Attempt: 3, SessionID: "s3"}, now.Add(49*time.Minute))
	st.RecordOutcome(ctx, findings.Outcome{FindingID: ids[0], Attempt: 3, Outcome: findings.OutcomeFixVerified, Summary: "restarted", SessionID: "s3"}, now.Add(50*time.Minute))
	f, _ = st.Get(ctx, ids[0])
	if f.Status != findings.StatusResolved || f.ResolveReason != findings.ResolveFixVerified || f.FixSummary != "restarted" {
		t.Fatalf("fix_verified: %+v", f)
	}
	recs, _ := st.Investigations(ctx, ids[0])
	if len(recs) != 3 || recs[0].Outcome != findings.OutcomeFixFailed || recs[1].Outcome != findings.OutcomeTimedOut || recs[2].Outcome != findings.OutcomeFixVerified {
		t.Fatalf("records: %+v", recs)
	}
	// Attempt limit: a regression resets the count.
	ch = commit(t, st, now.Add(2*time.Hour), true, fobs("node/a", "high_cpu", "warning", "x"))
	if ch[0].Kind != findings.ChangeReopened || ch[0].Finding.Attempts != 0 || ch[0].Finding.PreviousFixSummary != "restarted" {
		t.Fatalf("regression: %+v", ch[0])
	}
}

// TestConcurrentActionsAndRuns: operator actions on one database file while
// runs commit; no update is lost.
func TestConcurrentActionsAndRuns(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	const n = 30
	var obs []findings.Observation
	for i := 0; i < n; i++ {
		obs = append(obs, fobs(fmt.Sprintf("node/%d", i), "high_cpu", "warning", "x"))
	}
	ch := commit(t, st, now, true, obs...)
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for r := 1; r <= 10; r++ {
			o := append([]findings.Observation(nil), obs...)
			for i := range o {
				o[i].Title = prompt.Safe(fmt.Sprintf("run %d", r), 200)
			}
			commit(t, st, now.Add(time.Duration(r)*time.Minute), true, o...)
		}
	}()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			req := findings.ActionRequest{Action: findings.ActionAcknowledge}
			if i%2 == 1 {
				req = findings.ActionRequest{Action: findings.ActionSnooze, For: 4 * time.Hour}
			}
			if _, err := st.Act(ctx, ch[i].Finding.ID, req, now.Add(30*time.Second)); err != nil {
				errs <- err
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		f, _ := st.Get(ctx, ch[i].Finding.ID)
		if (i%2 == 0 && f.AcknowledgedAt == nil) || (i%2 == 1 && f.SnoozedUntil == nil) || f.TimesRaised != 11 {
			t.Fatalf("finding %d lost an update: ack=%v snooze=%v raised=%d", i, f.AcknowledgedAt, f.SnoozedUntil, f.TimesRaised)
		}
	}
}

func TestEnqueueIsIdempotent(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	row := findings.OutboxEvent{ID: "01TESTEVENT", Subject: "remediation.outcomes", Type: "patrold.remediation.outcome", Time: now, Data: []byte(`{"x":1}`)}
	if err := st.Enqueue(ctx, row, row); err != nil {
		t.Fatal(err)
	}
	if err := st.Enqueue(ctx, row); err != nil {
		t.Fatal(err)
	}
	if n, _ := st.PendingCount(ctx); n != 1 {
		t.Fatalf("%d pending, want the one event once", n)
	}
	if err := st.Enqueue(ctx, findings.OutboxEvent{ID: "x"}); err == nil || !strings.Contains(err.Error(), "subject") {
		t.Fatalf("a row without subject: %v", err)
	}
}

// TestEventHistoryIsBounded: repeated snoozes (each one an event; a
// second ack records none) keep only the newest MaxEventsPerFinding.
func TestEventHistoryIsBounded(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	ch := commit(t, st, now, true, fobs("node/a", "high_cpu", "warning", "x"))
	id := ch[0].Finding.ID
	for i := 0; i < findings.MaxEventsPerFinding+10; i++ {
		if _, err := st.Act(ctx, id, findings.ActionRequest{Action: findings.ActionSnooze, For: time.Hour, Actor: fmt.Sprint(i)}, now.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := st.Events(ctx, id)
	if err != nil || len(ev) != findings.MaxEventsPerFinding {
		t.Fatalf("%d events kept, want %d: %v", len(ev), findings.MaxEventsPerFinding, err)
	}
	if ev[0].Kind == "detected" || !strings.HasSuffix(ev[len(ev)-1].Detail, fmt.Sprint(findings.MaxEventsPerFinding+9)) {
		t.Fatalf("oldest not dropped first: first %+v last %+v", ev[0], ev[len(ev)-1])
	}
}

func TestStateCounts(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	ch := commit(t, st, now, true, fobs("node/a", "high_cpu", "warning", "x"), fobs("node/b", "high_cpu", "critical", "x"), fobs("node/c", "high_cpu", "warning", "x"))
	st.Act(ctx, ch[0].Finding.ID, findings.ActionRequest{Action: findings.ActionSnooze, For: 2 * time.Hour}, now)
	st.Act(ctx, ch[2].Finding.ID, findings.ActionRequest{Action: findings.ActionSuppress}, now)
	got := map[string]int{}
	list, err := st.StateCounts(ctx, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		got[c.State+"/"+string(c.Severity)] += c.Count
	}
	want := map[string]int{"snoozed/warning": 1, "detected/critical": 1, "suppressed/warning": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// After the snooze ends the finding counts as detected again.
	list, _ = st.StateCounts(ctx, now.Add(3*time.Hour))
	got = map[string]int{}
	for _, c := range list {
		got[c.State+"/"+string(c.Severity)] += c.Count
	}
	if got["detected/warning"] != 1 || got["snoozed/warning"] != 0 {
		t.Fatalf("after the snooze: %v", got)
	}
}

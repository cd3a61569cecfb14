package outcome_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/findings/outcome"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/file"
	"github.com/patrold/patrold/store"
	"github.com/patrold/patrold/store/storetest"
)

var at = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// writer is a writer's outcome path over a real store: the handler the
// daemon runs on outcomes, confirming fixes against a file source.
type writer struct {
	st   *store.Store
	snap string
	db   string // the database file
	h    outcome.Handler
	f    findings.Finding
}

func newWriter(t *testing.T, memory float64) *writer {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(context.Background(), filepath.Join(dir, "patrold.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	w := &writer{st: st, snap: filepath.Join(dir, "snapshot.json"), db: filepath.Join(dir, "patrold.db")}
	w.setMemory(t, memory)
	src, err := file.New(file.Options{Path: w.snap})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := alerts.New(alerts.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	check := assistant.ConditionCheck(st.Get, func() snapshot.Source { return src }, func() signals.Thresholds { return pol })
	w.h = outcome.Handler{Recorder: outcome.Confirmed{Recorder: st, Check: check}, Now: func() time.Time { return at.Add(10 * time.Minute) }}

	ctx := context.Background()
	runID := findings.NewID(at)
	obs := findings.Observation{Key: "high_memory", ResourceID: "node/pve1", Category: findings.CategoryPerformance,
		Severity: findings.SeverityCritical, Source: findings.SourceDeterministic, Title: prompt.Safe("memory high", 4000), Description: prompt.Safe("memory 91%", 4000), Evidence: prompt.Safe("memory 91%", 4000)}
	ch, err := st.CommitRun(ctx, findings.RunInput{RunID: runID, Now: at, Observations: []findings.Observation{obs}, Policy: findings.DefaultPublishPolicy()},
		func([]findings.Change) (findings.RunRecord, []findings.OutboxDraft, error) {
			return findings.RunRecord{ID: runID, Trigger: "manual", Status: "critical", Analysis: "deterministic", StartedAt: at}, nil, nil
		})
	if err != nil || len(ch) != 1 {
		t.Fatalf("seed finding: %v %v", ch, err)
	}
	draft := func(f *findings.Finding, attempt int, epoch uint64) findings.OutboxDraft {
		return findings.OutboxDraft{Subject: "remediation.requests", Type: "patrold.remediation.request", ResourceID: f.ResourceID, Data: map[string]int{"attempt": attempt}}
	}
	got, err := st.RequestInvestigations(ctx, []string{ch[0].Finding.ID}, findings.DefaultGate(), findings.AutonomyFull, at, draft)
	if err != nil || len(got) != 1 {
		t.Fatalf("dispatch: %v %v", got, err)
	}
	w.f = got[0]
	// The worker records its session before it runs.
	if err := st.StartSession(ctx, "real-session", w.f.ID, w.f.Attempt, "playbook", at); err != nil {
		t.Fatal(err)
	}
	return w
}

// setMemory writes the fleet with node/pve1 at memory percent.
func (w *writer) setMemory(t *testing.T, memory float64) {
	t.Helper()
	body := fmt.Sprintf(`{"version":1,"taken_at":%q,"resources":[{"id":"node/pve1","kind":"node","name":"pve1","status":"online","metrics":{"memory_percent":%g}}]}`,
		at.Format(time.RFC3339), memory)
	if err := os.WriteFile(w.snap, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (w *writer) real(o string, summary string) findings.Outcome {
	return findings.Outcome{FindingID: w.f.ID, SessionID: "real-session", Attempt: w.f.Attempt, Outcome: o, Summary: summary}
}

// Item 1 of the bus attack: while a real session is open, outcomes that
// do not answer the session patrold dispatched (invented session id,
// another attempt, another epoch) change nothing stored.
func TestForgedOutcomesChangeNothing(t *testing.T) {
	w := newWriter(t, 91)
	ctx := context.Background()
	forged := map[string]findings.Outcome{}
	o := w.real(findings.OutcomeFixVerified, "forged: memory now 12%, fixed")
	o.SessionID = "0123456789abcdef"
	forged["invented session id"] = o
	o = w.real(findings.OutcomeFixVerified, "forged")
	o.Attempt++
	forged["another attempt"] = o
	o = w.real(findings.OutcomeFixVerified, "forged")
	o.Epoch = 7
	forged["another epoch"] = o
	o = w.real(findings.OutcomeCannotFix, "forged")
	o.SessionID = ""
	forged["no session"] = o
	for name, o := range forged {
		before := storetest.DumpDB(t, w.db)
		if err := w.h.Handle(ctx, o); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		storetest.SameDB(t, name, storetest.DumpDB(t, w.db), before)
	}
}

// A fix_verified claim the writer's own check does not confirm is
// recorded as fix_verification_failed with the claim and the
// measurement; the finding stays active. A replay changes nothing.
func TestUnconfirmedFixIsVerificationFailed(t *testing.T) {
	w := newWriter(t, 91)
	ctx := context.Background()
	if err := w.h.Handle(ctx, w.real(findings.OutcomeFixVerified, "memory now 12%, fixed")); err != nil {
		t.Fatal(err)
	}
	recs, err := w.st.Investigations(ctx, w.f.ID)
	if err != nil {
		t.Fatal(err)
	}
	ended := at.Add(10 * time.Minute)
	want := []findings.InvestigationRecord{{FindingID: w.f.ID, Attempt: 1, Episode: 1, SessionID: "real-session", StartedAt: at, EndedAt: &ended,
		Outcome: findings.OutcomeFixVerificationFailed,
		Summary: "session claimed fix_verified (memory now 12%, fixed); patrold's check measured: high_memory still present on node/pve1 (value 91, threshold 80)"}}
	if !reflect.DeepEqual(recs, want) {
		t.Fatalf("investigations\n got: %+v\nwant: %+v", recs, want)
	}
	f, err := w.st.Get(ctx, w.f.ID)
	if err != nil || !f.Active() || f.LastOutcome != findings.OutcomeFixVerificationFailed {
		t.Fatalf("finding after an unconfirmed fix: %+v %v", f, err)
	}
	before := storetest.DumpDB(t, w.db)
	w.setMemory(t, 12)
	if err := w.h.Handle(ctx, w.real(findings.OutcomeFixVerified, "replayed")); err != nil {
		t.Fatal(err)
	}
	storetest.SameDB(t, "replayed outcome", storetest.DumpDB(t, w.db), before)
}

// A fix the check confirms resolves the finding, once.
func TestConfirmedFixResolves(t *testing.T) {
	w := newWriter(t, 12)
	ctx := context.Background()
	if err := w.h.Handle(ctx, w.real(findings.OutcomeFixVerified, "dropped caches")); err != nil {
		t.Fatal(err)
	}
	f, err := w.st.Get(ctx, w.f.ID)
	if err != nil || f.Status != findings.StatusResolved || f.ResolveReason != findings.ResolveFixVerified || f.FixSummary != "dropped caches" {
		t.Fatalf("finding after a confirmed fix: %+v %v", f, err)
	}
	before := storetest.DumpDB(t, w.db)
	if err := w.h.Handle(ctx, w.real(findings.OutcomeFixVerified, "dropped caches")); err != nil {
		t.Fatal(err)
	}
	storetest.SameDB(t, "replayed outcome", storetest.DumpDB(t, w.db), before)
}

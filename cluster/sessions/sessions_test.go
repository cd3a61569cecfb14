package sessions_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/bus/embedded/natstest"
	"github.com/patrold/patrold/cluster/sessions"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/file"
	"github.com/patrold/patrold/store"
	"github.com/patrold/patrold/store/records"
)

const prefix = "patrol"

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// rig is a real embedded NATS server, a real store and the session service
// on it.
type rig struct {
	nc     *nats.Conn
	st     *store.Store
	client *sessions.Client
	f      findings.Finding
	dir    string
}

func newRig(t *testing.T, serve bool, opts ...sessions.Option) *rig {
	t.Helper()
	dir := t.TempDir()
	srv := natstest.Server(t)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	st, err := store.Open(context.Background(), filepath.Join(dir, "patrold.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := &rig{nc: nc, st: st, dir: dir}
	r.f = r.seed(t)
	if serve {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- sessions.ServeAuthenticated(ctx, nc, prefix, st, slog.New(slog.DiscardHandler), nil, nil, opts...)
		}()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
		// The service is up once a call is answered.
		probe, _ := sessions.NewClient(nc, prefix, time.Second, nil)
		testkit.EventuallyState(t, 10*time.Second, "the session service answers", func() (bool, string) {
			_, err := probe.Get(context.Background(), r.f.ID)
			return err == nil, fmt.Sprint(err)
		})
	}
	c, err := sessions.NewClient(nc, prefix, 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.client = c
	return r
}

// seed files one critical finding and starts its investigation (attempt 1).
func (r *rig) seed(t *testing.T) findings.Finding {
	t.Helper()
	ctx := context.Background()
	runID := findings.NewID(t0)
	obs := findings.Observation{Key: "high_disk", ResourceID: "storage/pve1/local-zfs", Category: findings.CategoryCapacity,
		Severity: findings.SeverityCritical, Source: findings.SourceDeterministic, Title: prompt.Safe("storage almost full", 4000),
		Description: prompt.Safe("usage 96.3%", 4000), Evidence: prompt.Safe("usage 96.3%", 4000)}
	ch, err := r.st.CommitRun(ctx, findings.RunInput{RunID: runID, Now: t0, Observations: []findings.Observation{obs}, Policy: findings.DefaultPublishPolicy()},
		func([]findings.Change) (findings.RunRecord, []findings.OutboxDraft, error) {
			return findings.RunRecord{ID: runID, Trigger: "manual", Status: "critical", Analysis: "deterministic", StartedAt: t0}, nil, nil
		})
	if err != nil || len(ch) != 1 {
		t.Fatalf("seed finding: %v %v", ch, err)
	}
	draft := func(f *findings.Finding, attempt int, epoch uint64) findings.OutboxDraft {
		return findings.OutboxDraft{Subject: contracts.SubjectRemediationRequests, Type: contracts.TypeRemediationRequest, ResourceID: f.ResourceID, Data: map[string]int{"attempt": attempt}}
	}
	got, err := r.st.RequestInvestigations(ctx, []string{ch[0].Finding.ID}, findings.DefaultGate(), findings.AutonomyFull, t0, draft)
	if err != nil || len(got) != 1 {
		t.Fatalf("start investigation: %v %v", got, err)
	}
	return got[0]
}

func equal(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("%s over NATS differs from the store's\n got: %s\nwant: %s", what, g, w)
	}
}

// Every method answers what the writer's store answers, whole values.
func TestClientAnswersAsTheStore(t *testing.T) {
	r := newRig(t, true)
	ctx := context.Background()
	c, st := r.client, r.st

	gotF, err := c.Get(ctx, r.f.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantF, err := st.Get(ctx, r.f.ID)
	if err != nil {
		t.Fatal(err)
	}
	gotF.Transitions, wantF.Transitions = nil, nil // flap history is not part of the wire (json:"-")
	equal(t, "finding", gotF, wantF)

	if err := c.StartSession(ctx, "s1", r.f.ID, 1, "playbook", t0); err != nil {
		t.Fatal(err)
	}
	end := records.SessionEnd{Outcome: "cannot_fix", Summary: "no action applies", FinishedAt: t0.Add(time.Minute),
		Transcript: []byte(`{"steps":[]}`), Exchange: []byte(`{"calls":[]}`), CostUSD: 0.25}
	if err := c.FinishSession(ctx, "s1", end); err != nil {
		t.Fatal(err)
	}
	wantS, err := st.Session(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if wantS.Outcome != "cannot_fix" || wantS.Transcript != `{"steps":[]}` {
		t.Fatalf("the writer stored %+v", wantS)
	}
	gotS, err := c.Session(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "session", gotS, wantS)
	gotL, err := c.LastSession(ctx, r.f.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "last session", gotL, wantS)
	if cost, err := c.SessionCost(ctx, "s1"); err != nil || cost != 0.25 {
		t.Fatalf("session cost = %v, %v; want 0.25", cost, err)
	}
	wantSpent, _ := st.SessionSpent(ctx, t0.Add(-time.Hour), "")
	if got, err := c.SessionSpent(ctx, t0.Add(-time.Hour), ""); err != nil || got != wantSpent || got != 0.25 {
		t.Fatalf("session spent = %v, %v; want %v", got, err, wantSpent)
	}
	wantRuns, _ := st.RunSpent(t0.Add(-time.Hour))
	if got, err := c.RunSpent(t0.Add(-time.Hour)); err != nil || got != wantRuns {
		t.Fatalf("spent = %v, %v; want %v", got, err, wantRuns)
	}
	if ex, err := c.SessionExchange(ctx, "s1"); err != nil || ex != `{"calls":[]}` {
		t.Fatalf("exchange = %q, %v", ex, err)
	}

	ap := records.ApprovalRecord{ID: "a1", FindingID: r.f.ID, SessionID: "s1", Attempt: 1, ResourceID: r.f.ResourceID,
		Action: "restart", Args: json.RawMessage(`{"target":"x"}`), Risk: "medium", State: "pending", CreatedAt: t0,
		ExpiresAt: t0.Add(time.Hour), Driver: "playbook", Autonomy: "approval", StartedAt: t0, Turns: 2,
		FSM: json.RawMessage(`{"state":"waiting"}`), Reason: prompt.Safe("needs an operator", 280)}
	if err := c.InsertApproval(ctx, ap); err != nil {
		t.Fatal(err)
	}
	wantA, err := st.Approval(ctx, "a1")
	if err != nil {
		t.Fatal(err)
	}
	gotA, err := c.Approval(ctx, "a1")
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "approval", gotA, wantA)
	for _, tc := range []struct {
		name string
		call func() ([]records.ApprovalRecord, error)
		want func() ([]records.ApprovalRecord, error)
	}{
		{"pending", func() ([]records.ApprovalRecord, error) { return c.PendingApprovals(ctx, t0, nil, 10) },
			func() ([]records.ApprovalRecord, error) { return st.PendingApprovals(ctx, t0, nil, 10) }},
		{"finding", func() ([]records.ApprovalRecord, error) { return c.FindingApprovals(ctx, r.f.ID) },
			func() ([]records.ApprovalRecord, error) { return st.FindingApprovals(ctx, r.f.ID) }},
		{"due", func() ([]records.ApprovalRecord, error) { return c.DueApprovals(ctx, t0.Add(2*time.Hour)) },
			func() ([]records.ApprovalRecord, error) { return st.DueApprovals(ctx, t0.Add(2*time.Hour)) }},
	} {
		got, err := tc.call()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want, err := tc.want()
		if err != nil || len(want) != 1 {
			t.Fatalf("%s: the store has %v, %v", tc.name, want, err)
		}
		equal(t, tc.name+" approvals", got, want)
	}
	ok, err := c.DecideApproval(ctx, "a1", "approved", "ops", t0.Add(time.Minute))
	if err != nil || !ok {
		t.Fatalf("decide = %v, %v", ok, err)
	}
	again, err := c.DecideApproval(ctx, "a1", "rejected", "ops", t0.Add(2*time.Minute))
	if err != nil || again {
		t.Fatalf("deciding a decided approval = %v, %v; want false, nil", again, err)
	}
	if got, _ := st.Approval(ctx, "a1"); got.State != "approved" || got.DecidedBy != "ops" {
		t.Fatalf("stored approval %+v", got)
	}

	// Stored through the wire exactly as stored locally: absent raw
	// fields stay absent, not JSON null.
	wire, local := ap, ap
	wire.ID, local.ID = "a2", "a3"
	wire.SessionID, local.SessionID = "s2", "s3"
	for _, id := range []string{"s2", "s3"} {
		if err := st.StartSession(ctx, id, r.f.ID, 1, "playbook", t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.InsertApproval(ctx, wire); err != nil {
		t.Fatal(err)
	}
	if err := st.InsertApproval(ctx, local); err != nil {
		t.Fatal(err)
	}
	viaWire, err := st.Approval(ctx, "a2")
	if err != nil {
		t.Fatal(err)
	}
	direct, err := st.Approval(ctx, "a3")
	if err != nil {
		t.Fatal(err)
	}
	direct.ID, direct.SessionID = "a2", "s2"
	equal(t, "approval stored through the wire", viaWire, direct)
}

// The errors a worker acts on: not found is findings.ErrNotFound, no
// writer is ErrNoWriter, a refused call names the field.
func TestClientErrors(t *testing.T) {
	r := newRig(t, true)
	ctx := context.Background()
	if _, err := r.client.Get(ctx, "0123456789abcdef"); !errors.Is(err, findings.ErrNotFound) {
		t.Fatalf("unknown finding: %v, want findings.ErrNotFound", err)
	}
	if _, err := r.client.Session(ctx, "nope"); !errors.Is(err, findings.ErrNotFound) {
		t.Fatalf("unknown session: %v, want findings.ErrNotFound", err)
	}
	msg, err := r.nc.Request(contracts.SessionsSubject(prefix)+"."+contracts.SessionMethodLastSession, []byte(`{"finding_id":"x","atempt":1}`), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if code, desc := msg.Header.Get("Nats-Service-Error-Code"), msg.Header.Get("Nats-Service-Error"); code != "400" || !strings.Contains(desc, `unknown field "atempt"`) {
		t.Fatalf("misspelt field answered %s %q", code, desc)
	}

	lone := newRig(t, false) // nobody serves
	if _, err := lone.client.Get(ctx, lone.f.ID); !errors.Is(err, sessions.ErrNoWriter) {
		t.Fatalf("no writer: %v, want ErrNoWriter", err)
	}
}

// A whole session run by an Assistant whose store is the client is stored
// by the writer exactly as the Assistant reports it.
func TestSessionThroughTheWriter(t *testing.T) {
	r := newRig(t, true)
	ctx := context.Background()
	snap := filepath.Join(r.dir, "snap.json")
	doc := `{"version":1,"taken_at":"2026-11-29T10:00:00Z","source":"test","resources":[
		{"id":"node/pve1","kind":"node","name":"pve1","status":"online","metrics":{"cpu_percent":10}},
		{"id":"storage/pve1/local-zfs","kind":"storage","name":"local-zfs","parent":"node/pve1","status":"online","metrics":{"usage_percent":96.3}}]}`
	if err := os.WriteFile(snap, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := file.New(file.Options{Path: snap})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := alerts.New(alerts.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := assistant.New(assistant.Options{Store: r.client, Source: func() snapshot.Source { return src },
		Thresholds: func() signals.Thresholds { return pol }, Autonomy: func() findings.Autonomy { return findings.AutonomyFull },
		Now: func() time.Time { return t0.Add(time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(ctx, assistant.Request{FindingID: r.f.ID, Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := r.st.LastSession(ctx, r.f.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if stored.ID != res.Transcript.SessionID || stored.Outcome != string(res.Transcript.Outcome) || stored.FinishedAt == nil {
		t.Fatalf("the writer stored %+v for a session that ended %s (%s)", stored, res.Transcript.Outcome, res.Transcript.SessionID)
	}
	var tr assistant.Transcript
	if err := json.Unmarshal([]byte(stored.Transcript), &tr); err != nil {
		t.Fatal(err)
	}
	equal(t, "transcript", tr, res.Transcript)
}

package store_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store/records"
)

func TestSessionsRoundTrip(t *testing.T) {
	st, ctx := openStore(t), context.Background()
	started := now
	if err := st.StartSession(ctx, "s1", "f1", 1, "model", started); err != nil {
		t.Fatal(err)
	}
	running := records.SessionRecord{ID: "s1", FindingID: "f1", Attempt: 1, Driver: "model", StartedAt: started, Transcript: "{}"}
	if got, err := st.Session(ctx, "s1"); err != nil || !reflect.DeepEqual(got, running) {
		t.Fatalf("Session(running) = %+v, %v; want %+v", got, err, running)
	}
	if raw, err := st.SessionExchange(ctx, "s1"); err != nil || raw != "" {
		t.Fatalf("SessionExchange(no calls) = %q, %v; want empty", raw, err)
	}

	finished := now.Add(time.Minute)
	end := records.SessionEnd{Outcome: "fix_queued", Summary: "waiting", FinishedAt: finished,
		Transcript: []byte(`{"session_id":"s1"}`), Exchange: []byte(`{"exchanges":[1]}`), CostUSD: 1.5}
	if err := st.FinishSession(ctx, "s1", end); err != nil {
		t.Fatal(err)
	}
	// Resumed after an approval: running again, then finished with no new
	// exchange (the stored one stays) and more cost (added).
	if err := st.StartSession(ctx, "s1", "f1", 1, "model", started); err != nil {
		t.Fatal(err)
	}
	if got, err := st.Session(ctx, "s1"); err != nil || got.Outcome != "" || got.FinishedAt != nil {
		t.Fatalf("resumed Session = %+v, %v; want running", got, err)
	}
	end2 := records.SessionEnd{Outcome: "fix_verified", Summary: "restarted", FinishedAt: finished.Add(time.Minute),
		Transcript: []byte(`{"session_id":"s1","steps":[]}`), CostUSD: 0.5}
	if err := st.FinishSession(ctx, "s1", end2); err != nil {
		t.Fatal(err)
	}
	fin := end2.FinishedAt
	want := records.SessionRecord{ID: "s1", FindingID: "f1", Attempt: 1, Driver: "model", Outcome: "fix_verified", Summary: "restarted",
		StartedAt: started, FinishedAt: &fin, Transcript: `{"session_id":"s1","steps":[]}`}
	if got, err := st.Session(ctx, "s1"); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Session = %+v, %v; want %+v", got, err, want)
	}
	if raw, err := st.SessionExchange(ctx, "s1"); err != nil || raw != `{"exchanges":[1]}` {
		t.Fatalf("SessionExchange = %q, %v; want the first stretch's", raw, err)
	}
	if cost, err := st.SessionCost(ctx, "s1"); err != nil || cost != 2 {
		t.Fatalf("SessionCost = %v, %v; want 2", cost, err)
	}

	// The newest session of an attempt; spend leaves out the asker.
	if err := st.StartSession(ctx, "s2", "f1", 1, "playbook", started.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, err := st.LastSession(ctx, "f1", 1); err != nil || got.ID != "s2" {
		t.Fatalf("LastSession = %+v, %v; want s2", got, err)
	}
	if v, err := st.SessionSpent(ctx, started, "s2"); err != nil || v != 2 {
		t.Fatalf("SessionSpent(except s2) = %v, %v; want 2", v, err)
	}
	if v, err := st.SessionSpent(ctx, started, "s1"); err != nil || v != 0 {
		t.Fatalf("SessionSpent(except s1) = %v, %v; want 0", v, err)
	}
	if v, err := st.SessionSpent(ctx, started.Add(2*time.Hour), ""); err != nil || v != 0 {
		t.Fatalf("SessionSpent(later) = %v, %v; want 0", v, err)
	}
}

func TestSessionNotFound(t *testing.T) {
	st, ctx := openStore(t), context.Background()
	if got, err := st.Session(ctx, "nope"); !errors.Is(err, findings.ErrNotFound) {
		t.Fatalf("Session(nope) = %+v, %v; want not found", got, err)
	}
	if got, err := st.LastSession(ctx, "f1", 1); !errors.Is(err, findings.ErrNotFound) {
		t.Fatalf("LastSession(none) = %+v, %v; want not found", got, err)
	}
	if raw, err := st.SessionExchange(ctx, "nope"); !errors.Is(err, findings.ErrNotFound) || !strings.Contains(err.Error(), "session nope") {
		t.Fatalf("SessionExchange(nope) = %q, %v; want not found naming the id", raw, err)
	}
	if cost, err := st.SessionCost(ctx, "nope"); !errors.Is(err, findings.ErrNotFound) || cost != 0 {
		t.Fatalf("SessionCost(nope) = %v, %v; want not found", cost, err)
	}
}

package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store/storetest"
)

// TestUndecodableRowIsABugReport: a run that cannot commit (a full disk)
// is marked failed with a summary a JSON function built. The writer
// publishes it as a string like every text column, and the standby
// stores it: both databases end equal. A row no replica can store that
// reaches the stream anyway (a writer's bug) is skipped, logged and
// counted, keeping its number: the standby applies the next change, no
// gap, no apply error.
func TestUndecodableRowIsABugReport(t *testing.T) {
	ctx := context.Background()
	nodes := newNodes(t, "a", "b")
	a, b := nodes[0], nodes[1]
	byHand(t, 1, a, b)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	r := findings.RunRecord{ID: findings.NewID(now), Trigger: "manual", Status: "running", Analysis: "deterministic", StartedAt: now}
	if err := a.st.StartRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := a.st.FailRun(ctx, r, errors.New("add finding: database or disk is full"), now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	rows, err := a.st.PendingEvents(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	publishRows(t, a, rows...)
	// The failed run's row and two silences; the first silence's row
	// as a writer's bug would publish it.
	sils := make([]findings.Silence, 2)
	for i := range sils {
		if sils[i], err = a.st.AddSilence(ctx, findings.Silence{Matchers: findings.Matchers{Resource: "vm-1"}, Comment: "maintenance",
			Author: "op", StartsAt: now, EndsAt: now.Add(time.Hour)}, now); err != nil {
			t.Fatal(err)
		}
	}
	more, err := a.st.PendingEventsAfter(ctx, rows[len(rows)-1].Seq, 100)
	if err != nil {
		t.Fatal(err)
	}
	corrupted := false
	for i, row := range more {
		c, err := contracts.DecodeStateChange(row.Data)
		if err != nil || c.Table != "silences" || corrupted {
			continue
		}
		c.Row["comment"] = json.RawMessage(`{"text":"maintenance"}`)
		if more[i].Data, err = json.Marshal(c); err != nil {
			t.Fatal(err)
		}
		corrupted = true
	}
	if !corrupted {
		t.Fatal("no silence change to corrupt")
	}
	publishRows(t, a, more...)
	// The relay finds every row on the stream.
	run(t, a.rel.Run)
	caughtUp(t, a, a.f, b.f)

	lag, err := b.f.Lag(ctx)
	if err != nil || lag.ApplyError != "" || lag.Gap != "" || lag.WaitingFor != 0 || lag.Dropped != 1 {
		t.Fatalf("standby after the bad row: %+v, %v", lag, err)
	}
	got, err := b.st.Silences(ctx, now, false)
	if err != nil || len(got) != 1 || got[0].ID != sils[1].ID {
		t.Fatalf("standby silences %+v (%v), want only %s", got, err, sils[1].ID)
	}
	// Runs are compared as listed: their reports stay on the writer.
	wantRuns, err := a.st.Runs(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	gotRuns, err := b.st.Runs(ctx, 10)
	if err != nil || !reflect.DeepEqual(gotRuns, wantRuns) || len(gotRuns) != 1 || gotRuns[0].Summary == nil {
		t.Fatalf("standby runs %+v (%v), want %+v", gotRuns, err, wantRuns)
	}
	wantDB, gotDB := replicated(storetest.DumpDB(t, a.st.Path())), replicated(storetest.DumpDB(t, b.st.Path()))
	for _, table := range []string{"runs", "silences"} {
		delete(wantDB, table)
		delete(gotDB, table)
	}
	storetest.SameDB(t, "standby after a failed run", gotDB, wantDB)
}

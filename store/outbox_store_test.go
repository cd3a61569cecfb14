package store_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store"
)

// TestRelayQueriesSkipSentRows: the relay's reads search the primary key
// above the sent mark (itself the last key of outbox_sent), with no table
// scan and no sort, so rows for sent events do not slow it down.
func TestRelayQueriesSkipSentRows(t *testing.T) {
	st := openStore(t)
	search := []string{"SEARCH outbox USING INTEGER PRIMARY KEY (rowid>?)", "SCALAR SUBQUERY 1", "SEARCH outbox_sent"}
	for sql, want := range map[string][]string{
		store.PendingEventsSQL: search,
		store.PendingCountSQL:  search,
		// the window's keys: the same search, at most limit rows
		store.PendingKeysSQL: append(append([]string{"CO-ROUTINE (subquery-2)"}, search...), "SCAN (subquery-2)"),
	} {
		var args []any
		for range strings.Count(sql, "?") {
			args = append(args, 10)
		}
		rows, err := st.DB().Query("EXPLAIN QUERY PLAN "+sql, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if !reflect.DeepEqual(plan, want) {
			t.Errorf("%s:\nplan %q\nwant %q", sql, plan, want)
		}
	}
}

// TestEnqueueStoresCompactData: stored data is what json.Marshal makes
// (compact, HTML escaped), because the relay splices it into the envelope
// as it is; data that is not JSON is refused, naming the row and field.
func TestEnqueueStoresCompactData(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	row := findings.OutboxEvent{ID: "01COMPACT", Subject: "remediation.outcomes", Type: "patrold.remediation.outcome", Time: at,
		Data: []byte("{ \"note\" : \"<b> & </b>\",\n \"n\": [1, 2] }")}
	if err := st.Enqueue(ctx, row); err != nil {
		t.Fatal(err)
	}
	got, err := st.PendingEvents(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := findings.OutboxEvent{Seq: got[0].Seq, ID: "01COMPACT", Subject: "remediation.outcomes", Type: "patrold.remediation.outcome", Time: at,
		Data: []byte(`{"note":"\u003cb\u003e \u0026 \u003c/b\u003e","n":[1,2]}`)}
	if len(got) != 1 || got[0].Seq == 0 || string(got[0].Data) != string(want.Data) || got[0].ID != want.ID || !got[0].Time.Equal(at) ||
		got[0].Subject != want.Subject || got[0].Type != want.Type || got[0].ResourceID != "" || got[0].SentAt != nil {
		t.Fatalf("stored %+v (data %s)\nwant %+v (data %s)", got, got[0].Data, want, want.Data)
	}
	bad := row
	bad.ID, bad.Data = "01BAD", []byte(`{"note":`)
	if err := st.Enqueue(ctx, bad); err == nil || !strings.HasPrefix(err.Error(), "enqueue 01BAD: data: ") {
		t.Fatalf("invalid data: %v", err)
	}
	if n, _ := st.PendingCount(ctx); n != 1 {
		t.Fatalf("%d pending after a refused row, want 1", n)
	}
}

// TestRunRecordWrittenInPlace: committing a run updates the row StartRun
// wrote (same rowid: not deleted and re-inserted) and stores the report.
func TestRunRecordWrittenInPlace(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	if err := st.StartRun(ctx, findings.RunRecord{ID: "01RUN", Trigger: "manual", Analysis: "deterministic", StartedAt: at}); err != nil {
		t.Fatal(err)
	}
	rowid := func() int64 {
		var id int64
		if err := st.DB().QueryRow("SELECT rowid FROM runs WHERE id = '01RUN'").Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	before := rowid()
	fin := at.Add(time.Second)
	_, err := st.CommitRun(ctx, findings.RunInput{RunID: "01RUN", Now: fin, Policy: findings.DefaultPublishPolicy()},
		func([]findings.Change) (findings.RunRecord, []findings.OutboxDraft, error) {
			return findings.RunRecord{ID: "01RUN", Trigger: "manual", Status: "healthy", Analysis: "deterministic", StartedAt: at,
				FinishedAt: &fin, Complete: true, Report: []byte(`{"run_id":"01RUN","status":"healthy"}`)}, nil, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if after := rowid(); after != before {
		t.Errorf("run row re-inserted: rowid %d -> %d", before, after)
	}
	got, err := st.Run(ctx, "01RUN")
	if err != nil {
		t.Fatal(err)
	}
	want := findings.RunRecord{ID: "01RUN", Trigger: "manual", Status: "healthy", Analysis: "deterministic", StartedAt: at, FinishedAt: &fin,
		Complete: true, Report: []byte(`{"run_id":"01RUN","status":"healthy"}`)}
	if got.ID != want.ID || got.Status != want.Status || !got.StartedAt.Equal(at) || got.FinishedAt == nil || !got.FinishedAt.Equal(fin) ||
		!got.Complete || string(got.Report) != string(want.Report) || got.Trigger != want.Trigger || got.Analysis != want.Analysis {
		t.Fatalf("run %+v\nwant %+v", got, want)
	}
	var typ string
	if err := st.DB().QueryRow("SELECT typeof(report) FROM runs WHERE id = '01RUN'").Scan(&typ); err != nil || typ != "text" {
		t.Fatalf("report stored as %q (%v), want text", typ, err)
	}
}

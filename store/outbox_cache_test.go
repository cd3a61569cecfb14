package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store"
)

// TestPendingEventsFromTheCacheAreWhatTheDatabaseHolds: the rows a store
// hands its relay from what it enqueued are, field for field, what a
// second store on the same file (no cache) reads back. That holds
// whatever else writes or deletes rows in between: another writer's rows
// interleaved, rows skipped as already present, data compacted on the way
// in, times in another zone, windows marked sent, unsent rows dropped by
// another process.
func TestPendingEventsFromTheCacheAreWhatTheDatabaseHolds(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "p.db")
	writer, other := openAt(t, path), openAt(t, path)
	zone := time.FixedZone("UTC+2", 2*3600)
	row := func(id, typ string, i int) findings.OutboxEvent {
		return findings.OutboxEvent{ID: id, Subject: "findings.opened.warning", Type: typ, ResourceID: fmt.Sprintf("vm/%d", i),
			Time: time.Date(2026, 11, 29, 8, 0, i, 123456789, zone), Data: json.RawMessage(fmt.Sprintf(`{"n":%d,"note":"a b"}`, i))}
	}
	compare := func(what string) {
		t.Helper()
		for _, limit := range []int{1, 3, 64, 65, 1000} {
			got, err := writer.PendingEvents(ctx, limit)
			if err != nil {
				t.Fatal(err)
			}
			want, err := other.PendingEvents(ctx, limit)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) && (len(got) != 0 || len(want) != 0) {
				t.Fatalf("%s, limit %d:\n got %+v\nwant %+v", what, limit, got, want)
			}
		}
	}
	first := []findings.OutboxEvent{row("a1", "patrold.finding.opened", 1), row("a2", "patrold.finding.opened", 2), row("a3", "patrold.finding.opened", 3)}
	first[1].Data = json.RawMessage("{ \"note\" : \"<b>\" }") // stored compacted and escaped
	first[2].SentAt = &first[2].Time                          // ignored on the way in
	if err := writer.Enqueue(ctx, first...); err != nil {
		t.Fatal(err)
	}
	compare("one batch")
	if err := other.Enqueue(ctx, row("b1", "patrold.state.change", 4), row("b2", "patrold.state.change", 5)); err != nil {
		t.Fatal(err)
	}
	compare("another writer's rows after it")
	// 70 rows: a full statement holding an id already stored (skipped),
	// then a short one.
	var batch []findings.OutboxEvent
	for i := range 70 {
		batch = append(batch, row(fmt.Sprintf("c%02d", i), "patrold.finding.opened", 10+i))
	}
	batch[5] = row("a1", "patrold.finding.opened", 99)
	if err := writer.Enqueue(ctx, batch...); err != nil {
		t.Fatal(err)
	}
	compare("a batch with a row already stored")
	pending, err := other.PendingEvents(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := writer.MarkSent(ctx, []int64{pending[0].Seq, pending[1].Seq, pending[2].Seq, pending[3].Seq}, time.Now()); err != nil {
		t.Fatal(err)
	}
	compare("a window marked sent")
	if n, err := other.DropUnsent(ctx, "patrold.state.change"); err != nil || n != 69 {
		t.Fatalf("DropUnsent = %d, %v; want 69", n, err)
	}
	compare("unsent rows dropped by another process")
	if err := writer.Enqueue(ctx, row("d1", "patrold.finding.opened", 200)); err != nil {
		t.Fatal(err)
	}
	compare("after the drop")
}

// TestPendingEventsTakeWhatThisProcessEnqueued: the relay's window of
// rows this store just wrote comes from memory, not from the database.
// Rows are never rewritten once stored. So a change made behind the
// store's back (here, to prove the point) is not seen until the rows were
// sent.
func TestPendingEventsTakeWhatThisProcessEnqueued(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	rows := sentRows(1, 3)
	if err := st.Enqueue(ctx, rows...); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB().Exec(`UPDATE outbox SET data = '{"changed":true}'`); err != nil {
		t.Fatal(err)
	}
	checkPending(t, st, withSeqs(rows, 1))
	if err := st.MarkSent(ctx, []int64{1}, sentT0); err != nil {
		t.Fatal(err)
	}
	// A row enqueued elsewhere in the window: the whole window is read.
	if _, err := st.DB().Exec(`INSERT INTO outbox (id, subject, type, time, data) VALUES ('x', 'runs.completed', 'patrold.run.completed', '2026-11-29T06:00:00Z', '{}')`); err != nil {
		t.Fatal(err)
	}
	want := withSeqs(rows[1:], 2)
	for i := range want {
		want[i].Data = json.RawMessage(`{"changed":true}`)
	}
	want = append(want, findings.OutboxEvent{Seq: 4, ID: "x", Subject: "runs.completed", Type: "patrold.run.completed", Time: sentT0, Data: json.RawMessage(`{}`)})
	checkPending(t, st, want)
}

// A run's events (the opened events a commit writes) reach the relay from
// memory too, exactly as a second handle reads them from the database.
func TestPendingEventsTakeWhatARunCommitted(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "p.db")
	st, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	other, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	at := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	commit(t, st, at, true, fobs("vm/1", "high_cpu", findings.SeverityWarning, "cpu 97%"), fobs("vm/2", "high_cpu", findings.SeverityCritical, "cpu 99%"))
	want, err := other.PendingEvents(ctx, 100)
	if err != nil || len(want) != 2 {
		t.Fatalf("the database holds %d pending events (%v), want 2 opened", len(want), err)
	}
	got, err := st.PendingEvents(ctx, 100)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("from memory:\n got %+v\nwant %+v (%v)", got, want, err)
	}
	// Proof that they came from memory: the database's copy changes
	// behind the store's back, the relay's does not.
	if _, err := st.DB().Exec(`UPDATE outbox SET data = '{"changed":true}'`); err != nil {
		t.Fatal(err)
	}
	if got, err := st.PendingEvents(ctx, 100); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("after the change behind its back:\n got %+v\nwant %+v (%v)", got, want, err)
	}
}

// TestPendingEventsSpanAnotherWritersRow: another process's row between
// two of this store's makes the window an unbroken run of seqs the cache
// does not hold whole; the rows are read, not taken from the cache's
// neighbours of the missing seq.
func TestPendingEventsSpanAnotherWritersRow(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "p.db")
	writer, other := openAt(t, path), openAt(t, path)
	rows := sentRows(1, 5)
	for i, st := range []*store.Store{writer, writer, other, writer, writer} {
		if err := st.Enqueue(ctx, rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := writer.MarkSent(ctx, []int64{1}, sentT0); err != nil {
		t.Fatal(err)
	}
	got, err := writer.PendingEventsAfter(ctx, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := withSeqs(rows[1:4], 2); !reflect.DeepEqual(got, want) {
		t.Fatalf("window of seqs 2..4 with another process's 3:\n got %+v\nwant %+v", got, want)
	}
}

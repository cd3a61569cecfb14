package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store"
)

var sentT0 = time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)

// sentRows are n outbox rows with ids from first on.
func sentRows(first, n int) []findings.OutboxEvent {
	out := make([]findings.OutboxEvent, n)
	for i := range out {
		out[i] = findings.OutboxEvent{ID: fmt.Sprintf("ev-%03d", first+i), Subject: "findings.opened.warning", Type: "patrold.finding.opened",
			ResourceID: fmt.Sprintf("vm/%d", first+i), Time: sentT0.Add(time.Duration(first+i) * time.Millisecond), Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, first+i))}
	}
	return out
}

// withSeqs returns rows with Seq set from first on.
func withSeqs(rows []findings.OutboxEvent, first int64) []findings.OutboxEvent {
	out := make([]findings.OutboxEvent, len(rows))
	for i, r := range rows {
		r.Seq = first + int64(i)
		out[i] = r
	}
	return out
}

func pendingOf(t *testing.T, st *store.Store) []findings.OutboxEvent {
	t.Helper()
	got, err := st.PendingEvents(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

type mark struct {
	Seq    int64
	SentAt string
}

func marks(t *testing.T, db *sql.DB) []mark {
	t.Helper()
	rows, err := db.Query("SELECT seq, sent_at FROM outbox_sent ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []mark
	for rows.Next() {
		var m mark
		if err := rows.Scan(&m.Seq, &m.SentAt); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func outboxSeqs(t *testing.T, db *sql.DB) []int64 {
	t.Helper()
	rows, err := db.Query("SELECT seq FROM outbox ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var q int64
		if err := rows.Scan(&q); err != nil {
			t.Fatal(err)
		}
		out = append(out, q)
	}
	return out
}

func checkPending(t *testing.T, st *store.Store, want []findings.OutboxEvent) {
	t.Helper()
	if got := pendingOf(t, st); !reflect.DeepEqual(got, want) && (len(got) != 0 || len(want) != 0) {
		t.Fatalf("pending:\n got %+v\nwant %+v", got, want)
	}
	if n, err := st.PendingCount(context.Background()); err != nil || n != int64(len(want)) {
		t.Fatalf("PendingCount = %d, %v; want %d", n, err, len(want))
	}
}

// TestMarkSentWritesOneMark: marking a window writes one row, its last
// seq; the rows at or below it are sent, those above pending. Seqs out of
// order, or a window that skips an unsent row, are refused, naming the
// row, and mark nothing.
func TestMarkSentWritesOneMark(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	rows := sentRows(1, 5)
	if err := st.Enqueue(ctx, rows...); err != nil {
		t.Fatal(err)
	}
	all := withSeqs(rows, 1)
	checkPending(t, st, all)

	if err := st.MarkSent(ctx, []int64{2, 1}, sentT0); err == nil || err.Error() != "mark sent: seqs must ascend, got 1 after 2" {
		t.Fatalf("descending seqs: %v", err)
	}
	if err := st.MarkSent(ctx, []int64{1, 3}, sentT0); err == nil || err.Error() != "mark sent through seq 3: unsent seq 2 is not among the acknowledged" {
		t.Fatalf("a window with a gap: %v", err)
	}
	// An unbroken run above an unsent row (marked by a shorter statement).
	if err := st.MarkSent(ctx, []int64{2, 3}, sentT0); err == nil || err.Error() != "mark sent through seq 3: unsent seq 1 is not among the acknowledged" {
		t.Fatalf("a window above an unsent row: %v", err)
	}
	checkPending(t, st, all)

	if err := st.MarkSent(ctx, []int64{1, 2}, sentT0.Add(1500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	checkPending(t, st, all[2:])
	// Again, and overlapping the mark: what is already marked is ignored.
	if err := st.MarkSent(ctx, []int64{1, 2}, sentT0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkSent(ctx, []int64{2, 3}, sentT0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	checkPending(t, st, all[3:])
	want := []mark{{2, "2026-11-29T06:00:01.500Z"}, {3, "2026-11-29T06:00:02.000Z"}}
	if got := marks(t, st.DB()); !reflect.DeepEqual(got, want) {
		t.Fatalf("marks %+v, want %+v", got, want)
	}
	// Dropped unsent rows leave the mark; later rows are pending.
	if n, err := st.DropUnsent(ctx); err != nil || n != 2 {
		t.Fatalf("DropUnsent = %d, %v; want 2", n, err)
	}
	checkPending(t, st, nil)
	more := sentRows(6, 1)
	if err := st.Enqueue(ctx, more...); err != nil {
		t.Fatal(err)
	}
	checkPending(t, st, withSeqs(more, 6))
}

// TestPruneSentByWindow: retention deletes the rows of windows marked
// before the cutoff, up to the first younger mark (a clock set back never
// prunes a younger window), and keeps the highest mark, so the pending
// rows stay told apart.
func TestPruneSentByWindow(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	rows := sentRows(1, 7)
	if err := st.Enqueue(ctx, rows...); err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		seqs []int64
		at   time.Duration
	}{{[]int64{1, 2}, 20 * time.Minute}, {[]int64{3, 4}, 0}, {[]int64{5, 6}, 30 * time.Minute}} {
		if err := st.MarkSent(ctx, m.seqs, sentT0.Add(m.at)); err != nil {
			t.Fatal(err)
		}
	}
	// The first window is younger than the cutoff: nothing goes, though
	// the second is older.
	if n, err := st.PruneSent(ctx, sentT0.Add(15*time.Minute)); err != nil || n != 0 {
		t.Fatalf("PruneSent before a young window = %d, %v; want 0", n, err)
	}
	if n, err := st.PruneSent(ctx, sentT0.Add(25*time.Minute)); err != nil || n != 4 {
		t.Fatalf("PruneSent = %d, %v; want 4", n, err)
	}
	if got, want := outboxSeqs(t, st.DB()), []int64{5, 6, 7}; !reflect.DeepEqual(got, want) {
		t.Fatalf("outbox after the prune: seqs %v, want %v", got, want)
	}
	if n, err := st.PruneSent(ctx, sentT0.Add(time.Hour)); err != nil || n != 2 {
		t.Fatalf("PruneSent of everything sent = %d, %v; want 2", n, err)
	}
	if got, want := marks(t, st.DB()), []mark{{6, "2026-11-29T06:30:00.000Z"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("marks after pruning everything sent: %+v, want %+v", got, want)
	}
	checkPending(t, st, withSeqs(rows[6:], 7))
	if n, err := st.PruneSent(ctx, sentT0.Add(time.Hour)); err != nil || n != 0 {
		t.Fatalf("PruneSent with nothing sent left = %d, %v; want 0", n, err)
	}
	checkPending(t, st, withSeqs(rows[6:], 7))
}

// TestOutboxSentMigration: migration 10 carries the sent rows over as one
// mark per window (its sent_at), publishes again a sent row above an
// unsent one, and drops the column; down restores each row's sent_at.
func TestOutboxSentMigration(t *testing.T) {
	ctx := context.Background()
	path, db, p := migratedTo(t, 9)
	rows := sentRows(1, 8)
	sent := map[int]any{1: "2026-11-29T06:00:01.5Z", 2: "2026-11-29T06:00:01.5Z", 3: "2026-11-29T06:00:01.5Z",
		4: "2026-11-29T06:00:02Z", 5: "2026-11-29T06:00:02Z", 7: "2026-11-29T06:00:03Z"}
	for i, r := range rows {
		if _, err := db.Exec("INSERT INTO outbox (id, subject, type, resource_id, time, data, sent_at) VALUES (?,?,?,?,?,?,?)",
			r.ID, r.Subject, r.Type, r.ResourceID, r.Time.Format(time.RFC3339Nano), []byte(r.Data), sent[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	st, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	var applied int
	if err := db.QueryRow("SELECT count(*) FROM goose_db_version WHERE version_id = 10 AND is_applied").Scan(&applied); err != nil || applied != 1 {
		t.Fatalf("migration 10 applied %d times, %v; want once", applied, err)
	}
	all := withSeqs(rows, 1)
	checkPending(t, st, all[5:])
	want := []mark{{3, "2026-11-29T06:00:01.500Z"}, {5, "2026-11-29T06:00:02.000Z"}}
	if got := marks(t, db); !reflect.DeepEqual(got, want) {
		t.Fatalf("marks %+v, want %+v", got, want)
	}
	var cols int
	if err := db.QueryRow("SELECT count(*) FROM pragma_table_info('outbox') WHERE name = 'sent_at'").Scan(&cols); err != nil || cols != 0 {
		t.Fatalf("sent_at columns left: %d, %v", cols, err)
	}
	if n, err := st.PruneSent(ctx, sentT0.Add(1800*time.Millisecond)); err != nil || n != 3 {
		t.Fatalf("PruneSent = %d, %v; want the first window's 3", n, err)
	}
	st.Close()

	if _, err := p.DownTo(ctx, 9); err != nil {
		t.Fatal(err)
	}
	type row struct {
		Seq    int64
		SentAt sql.NullString
	}
	got := []row{}
	q, err := db.Query("SELECT seq, sent_at FROM outbox ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	for q.Next() {
		var r row
		if err := q.Scan(&r.Seq, &r.SentAt); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	q.Close()
	at := sql.NullString{String: "2026-11-29T06:00:02.000Z", Valid: true}
	if wantRows := []row{{4, at}, {5, at}, {6, sql.NullString{}}, {7, sql.NullString{}}, {8, sql.NullString{}}}; !reflect.DeepEqual(got, wantRows) {
		t.Fatalf("after down: %+v, want %+v", got, wantRows)
	}
	var idx int
	if err := db.QueryRow("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'outbox_pending'").Scan(&idx); err != nil || idx != 1 {
		t.Fatalf("outbox_pending index after down: %d, %v", idx, err)
	}
}

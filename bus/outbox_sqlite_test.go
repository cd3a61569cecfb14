package bus

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/patrold/patrold/contracts"
)

// sqliteOutbox is a small SQLite outbox for the tests and benchmarks, shaped
// like the findings store's table so the relay's real cost is measured.
type sqliteOutbox struct {
	db *sql.DB
}

var _ Outbox = (*sqliteOutbox)(nil)

const outboxSchema = `
CREATE TABLE IF NOT EXISTS outbox (
	seq         INTEGER PRIMARY KEY AUTOINCREMENT,
	id          TEXT NOT NULL UNIQUE,
	subject     TEXT NOT NULL,
	type        TEXT NOT NULL,
	resource_id TEXT NOT NULL DEFAULT '',
	time        INTEGER NOT NULL,
	data        BLOB NOT NULL,
	sent_at     INTEGER
);
CREATE INDEX IF NOT EXISTS outbox_pending ON outbox(seq) WHERE sent_at IS NULL;`

func openOutbox(tb testing.TB, path string) *sqliteOutbox {
	tb.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_busy_timeout=5000&_synchronous=NORMAL")
	if err != nil {
		tb.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(outboxSchema); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	return &sqliteOutbox{db: db}
}

// Insert writes rows in one transaction, as a commit of the findings store
// would; Seq is assigned by SQLite.
func (o *sqliteOutbox) Insert(ctx context.Context, rows []contracts.OutboxEvent) error {
	tx, err := o.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	st, err := tx.PrepareContext(ctx, `INSERT INTO outbox(id, subject, type, resource_id, time, data) VALUES (?,?,?,?,?,?)`)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, r := range rows {
		if _, err := st.ExecContext(ctx, r.ID, r.Subject, r.Type, r.ResourceID, r.Time.UnixNano(), []byte(r.Data)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func (o *sqliteOutbox) PendingEvents(ctx context.Context, limit int) ([]contracts.OutboxEvent, error) {
	return o.PendingEventsAfter(ctx, 0, limit)
}

func (o *sqliteOutbox) PendingEventsAfter(ctx context.Context, after int64, limit int) ([]contracts.OutboxEvent, error) {
	rows, err := o.db.QueryContext(ctx, `SELECT seq, id, subject, type, resource_id, time, data FROM outbox
		WHERE sent_at IS NULL AND seq > ? ORDER BY seq LIMIT ?`, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []contracts.OutboxEvent
	for rows.Next() {
		var e contracts.OutboxEvent
		var ts int64
		var data []byte
		if err := rows.Scan(&e.Seq, &e.ID, &e.Subject, &e.Type, &e.ResourceID, &ts, &data); err != nil {
			return nil, err
		}
		e.Time, e.Data = time.Unix(0, ts).UTC(), data
		out = append(out, e)
	}
	return out, rows.Err()
}

func (o *sqliteOutbox) MarkSent(ctx context.Context, seqs []int64, at time.Time) error {
	if len(seqs) == 0 {
		return nil
	}
	args := make([]any, 0, len(seqs)+1)
	args = append(args, at.UnixNano())
	for _, s := range seqs {
		args = append(args, s)
	}
	q := `UPDATE outbox SET sent_at = ? WHERE seq IN (?` + strings.Repeat(",?", len(seqs)-1) + `)`
	_, err := o.db.ExecContext(ctx, q, args...)
	return err
}

func (o *sqliteOutbox) PruneSent(ctx context.Context, before time.Time) (int64, error) {
	res, err := o.db.ExecContext(ctx, `DELETE FROM outbox WHERE sent_at IS NOT NULL AND sent_at < ?`, before.UnixNano())
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (o *sqliteOutbox) PendingCount(ctx context.Context) (int64, error) {
	var n int64
	err := o.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM outbox WHERE sent_at IS NULL`).Scan(&n)
	return n, err
}

// plainOutbox hides PendingEventsAfter: the relay then waits for each
// window's acks before it reads the next.
type plainOutbox struct{ Outbox }

func (o *sqliteOutbox) count(tb testing.TB, where string) int {
	tb.Helper()
	var n int
	if err := o.db.QueryRow(`SELECT COUNT(*) FROM outbox WHERE ` + where).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

// failingMarkSent wraps an outbox so MarkSent fails while armed: the relay
// has its acks but "crashes" before recording them.
type failingMarkSent struct {
	*sqliteOutbox
	mu    sync.Mutex
	armed bool
	calls int
}

var errCrash = errors.New("simulated crash before MarkSent")

func (f *failingMarkSent) MarkSent(ctx context.Context, seqs []int64, at time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.armed {
		return errCrash
	}
	return f.sqliteOutbox.MarkSent(ctx, seqs, at)
}

// findingRows builds n finding events, ids "<tag>-<i>", cycling through
// events and severities; data carries the index so order can be checked.
func findingRows(tb testing.TB, tag string, from, n int, now time.Time) []contracts.OutboxEvent {
	tb.Helper()
	rows := make([]contracts.OutboxEvent, 0, n)
	for i := from; i < from+n; i++ {
		ev := contracts.FindingEvents[i%len(contracts.FindingEvents)]
		sev := contracts.Severities[i%len(contracts.Severities)]
		subject, typ, err := contracts.FindingSubject(ev, sev)
		if err != nil {
			tb.Fatal(err)
		}
		rows = append(rows, contracts.OutboxEvent{
			ID:         fmt.Sprintf("%s-%06d", tag, i),
			Subject:    subject,
			Type:       typ,
			ResourceID: fmt.Sprintf("vm/%d", 100+i%50),
			Time:       now.Add(time.Duration(i) * time.Millisecond),
			Data:       []byte(fmt.Sprintf(`{"index":%d,"finding":{"id":"%016x","severity":%q},"reason":"first","recurrence":1}`, i, i, sev)),
		})
	}
	return rows
}

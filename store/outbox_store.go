package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"github.com/patrold/patrold/findings"
	"strings"
	"time"
)

type outboxWriter struct {
	stmt *sql.Stmt
	now  time.Time
	buf  bytes.Buffer // the encoder's output, reused for every event
	enc  *json.Encoder
}

func newOutboxWriter(ctx context.Context, tx *sql.Tx, now time.Time) (*outboxWriter, error) {
	st, err := tx.PrepareContext(ctx, "INSERT INTO outbox (id, subject, type, resource_id, time, data) VALUES (?,?,?,?,?,?)")
	if err != nil {
		return nil, err
	}
	w := &outboxWriter{stmt: st, now: now}
	w.enc = json.NewEncoder(&w.buf)
	return w, nil
}

func (w *outboxWriter) close() { w.stmt.Close() }

// add encodes the event's data once, into a reused buffer (the driver
// copies it into SQLite), and writes the row. The bytes are what
// json.Marshal makes: compact JSON, which the relay splices into the
// envelope as it is.
func (w *outboxWriter) add(ctx context.Context, d findings.OutboxDraft) error {
	w.buf.Reset()
	if err := w.enc.Encode(d.Data); err != nil {
		return fmt.Errorf("encode %s event: %w", d.Type, err)
	}
	data := bytes.TrimSuffix(w.buf.Bytes(), []byte("\n"))
	if _, err := w.stmt.ExecContext(ctx, findings.NewID(w.now), d.Subject, d.Type, d.ResourceID, fmtTime(w.now), data); err != nil {
		return fmt.Errorf("write outbox %s: %w", d.Type, err)
	}
	return nil
}

// The relay's queries. Both read only the unsent end of the outbox_pending
// index (sent_at, seq): sent rows, however many, are never visited
// (TestRelayQueriesUseThePendingIndex).
const (
	pendingEventsSQL = "SELECT seq, id, subject, type, resource_id, time, data FROM outbox WHERE sent_at IS NULL ORDER BY seq LIMIT ?"
	pendingCountSQL  = "SELECT count(*) FROM outbox WHERE sent_at IS NULL"
)

// PendingEvents returns up to limit unsent outbox events in Seq order.
func (s *Store) PendingEvents(ctx context.Context, limit int) ([]findings.OutboxEvent, error) {
	rows, err := s.db.QueryContext(ctx, pendingEventsSQL, limit)
	if err != nil {
		return nil, fmt.Errorf("pending events: %w", err)
	}
	defer rows.Close()
	var out []findings.OutboxEvent
	for rows.Next() {
		var e findings.OutboxEvent
		var at string
		var data []byte
		if err := rows.Scan(&e.Seq, &e.ID, &e.Subject, &e.Type, &e.ResourceID, &at, &data); err != nil {
			return nil, err
		}
		e.Time, e.Data = parseTime(at), json.RawMessage(data)
		out = append(out, e)
	}
	return out, rows.Err()
}

// MarkSent records that events were acknowledged by JetStream.
func (s *Store) MarkSent(ctx context.Context, seqs []int64, at time.Time) error {
	if len(seqs) == 0 {
		return nil
	}
	args := make([]any, 0, len(seqs)+1)
	args = append(args, fmtTime(at))
	for _, q := range seqs {
		args = append(args, q)
	}
	_, err := s.db.ExecContext(ctx, "UPDATE outbox SET sent_at = ? WHERE seq IN ("+strings.TrimSuffix(strings.Repeat("?,", len(seqs)), ",")+")", args...)
	if err != nil {
		return fmt.Errorf("mark sent: %w", err)
	}
	return nil
}

// PruneSent deletes sent events older than before.
func (s *Store) PruneSent(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, "DELETE FROM outbox WHERE sent_at IS NOT NULL AND sent_at < ?", fmtTime(before))
	if err != nil {
		return 0, fmt.Errorf("prune outbox: %w", err)
	}
	return res.RowsAffected()
}

// PendingCount returns the number of unsent events.
func (s *Store) PendingCount(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, pendingCountSQL).Scan(&n)
	return n, err
}

// Enqueue writes ready-made outbox rows (events built elsewhere, such as a
// remediation session's outcome) in one transaction. A row whose id is
// already in the outbox is skipped, so re-sending an event is harmless.
func (s *Store) Enqueue(ctx context.Context, rows ...findings.OutboxEvent) error {
	return s.withTx(ctx, func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, "INSERT OR IGNORE INTO outbox (id, subject, type, resource_id, time, data) VALUES (?,?,?,?,?,?)")
		if err != nil {
			return err
		}
		defer st.Close()
		var compact, buf bytes.Buffer
		for _, r := range rows {
			if r.ID == "" || r.Subject == "" || r.Type == "" {
				return fmt.Errorf("enqueue: id, subject and type are required (id %q)", r.ID)
			}
			// Stored data is what json.Marshal makes (compact, HTML
			// escaped): the relay splices it into the envelope as it is.
			compact.Reset()
			buf.Reset()
			if err := json.Compact(&compact, r.Data); err != nil {
				return fmt.Errorf("enqueue %s: data: %w", r.ID, err)
			}
			json.HTMLEscape(&buf, compact.Bytes())
			if _, err := st.ExecContext(ctx, r.ID, r.Subject, r.Type, r.ResourceID, fmtTime(r.Time), buf.Bytes()); err != nil {
				return fmt.Errorf("enqueue %s: %w", r.ID, err)
			}
		}
		return nil
	})
}

package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/patrold/patrold/findings"

	"github.com/go-json-experiment/json/jsontext"
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
// Rows are inserted enqueueChunk at a time, one statement each.
func (s *Store) Enqueue(ctx context.Context, rows ...findings.OutboxEvent) error {
	return s.withTx(ctx, func(tx *sql.Tx) error {
		var full *sql.Stmt
		defer func() {
			if full != nil {
				full.Close()
			}
		}()
		args := make([]any, 0, enqueueColumns*min(len(rows), enqueueChunk))
		for len(rows) > 0 {
			chunk := rows[:min(len(rows), enqueueChunk)]
			rows = rows[len(chunk):]
			args = args[:0]
			for _, r := range chunk {
				data, err := storedData(r)
				if err != nil {
					return err
				}
				args = append(args, r.ID, r.Subject, r.Type, r.ResourceID, fmtTime(r.Time), data)
			}
			var err error
			if len(chunk) == enqueueChunk {
				if full == nil {
					if full, err = tx.PrepareContext(ctx, enqueueSQL(enqueueChunk)); err != nil {
						return err
					}
				}
				_, err = full.ExecContext(ctx, args...)
			} else {
				_, err = tx.ExecContext(ctx, enqueueSQL(len(chunk)), args...)
			}
			if err != nil {
				return fmt.Errorf("enqueue %s..%s: %w", chunk[0].ID, chunk[len(chunk)-1].ID, err)
			}
		}
		return nil
	})
}

// enqueueChunk rows are inserted by one statement (6 parameters each, far
// below SQLite's limit).
const (
	enqueueChunk   = 64
	enqueueColumns = 6
)

func enqueueSQL(n int) string {
	return "INSERT OR IGNORE INTO outbox (id, subject, type, resource_id, time, data) VALUES " +
		strings.TrimSuffix(strings.Repeat("(?,?,?,?,?,?),", n), ",")
}

// storedData checks a row and returns its data as the outbox stores it:
// what json.Marshal makes (compact, HTML escaped), because the relay
// splices it into the envelope as it is. Data already in that form (what
// json.Marshal made, the usual case) is stored as it is, after one
// validity check; anything else is compacted and escaped.
func storedData(r findings.OutboxEvent) ([]byte, error) {
	if r.ID == "" || r.Subject == "" || r.Type == "" {
		return nil, fmt.Errorf("enqueue: id, subject and type are required (id %q)", r.ID)
	}
	if marshalForm(r.Data) {
		return r.Data, nil
	}
	var compact, buf bytes.Buffer
	if err := json.Compact(&compact, r.Data); err != nil {
		return nil, fmt.Errorf("enqueue %s: data: %w", r.ID, err)
	}
	json.HTMLEscape(&buf, compact.Bytes())
	return buf.Bytes(), nil
}

// marshalForm reports whether data is one valid JSON value that
// json.Compact and json.HTMLEscape would leave unchanged: no white space
// outside strings and nothing HTMLEscape rewrites (<, >, &, U+2028,
// U+2029). It is false for anything it is not sure of, which then takes
// the Compact path (and its error for invalid JSON).
func marshalForm(data []byte) bool {
	if len(data) == 0 || bytes.IndexByte(data, '<') >= 0 || bytes.IndexByte(data, '>') >= 0 || bytes.IndexByte(data, '&') >= 0 ||
		bytes.Contains(data, lineSep) || bytes.Contains(data, paraSep) {
		return false
	}
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			return false
		case '"':
			// Skip the string: to its closing quote, past escapes.
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		}
	}
	return jsontext.Value(data).IsValid()
}

var lineSep, paraSep = []byte("\u2028"), []byte("\u2029")

package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/patrold/patrold/findings"
)

type outboxWriter struct {
	stmt *sql.Stmt
	now  time.Time
	buf  bytes.Buffer // the encoder's output, reused for every event
	enc  *json.Encoder
	// written are the rows as the relay would read them back, for its
	// cache once the transaction commits (capped like the cache).
	written []findings.OutboxEvent
	bytes   int
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
	id, at := findings.NewID(w.now), fmtTime(w.now)
	res, err := w.stmt.ExecContext(ctx, id, d.Subject, d.Type, d.ResourceID, at, data)
	if err != nil {
		return fmt.Errorf("write outbox %s: %w", d.Type, err)
	}
	if seq, err := res.LastInsertId(); err == nil && w.bytes+len(data) < outboxCacheBytes {
		w.written = append(w.written, findings.OutboxEvent{Seq: seq, ID: id, Subject: d.Subject, Type: d.Type, ResourceID: d.ResourceID,
			Time: parseTime(at), Data: json.RawMessage(bytes.Clone(data))})
		w.bytes += len(data)
	}
	return nil
}

// The sent mark: outbox_sent holds one row per window the relay marked,
// the highest seq it acknowledged. Every row at or below it was
// acknowledged:
//   - the relay marks only an unbroken prefix in seq order;
//   - seq, an AUTOINCREMENT key assigned under SQLite's write lock, only
//     grows in commit order.
//
// The unsent rows are those above the highest mark: a range of the
// primary key. Marking a window sent writes one small row, not the
// window's ~1 KB rows again.
const (
	sentMarkSQL = "(SELECT coalesce(max(seq), 0) FROM outbox_sent)"
	unsentCond  = "seq > " + sentMarkSQL
	// unsentAfterCond: the unsent rows after a seq (its one parameter).
	unsentAfterCond = "seq > max(?, " + sentMarkSQL + ")"
	// sentLayout has a fixed width, so that marks compare in time order
	// as text (migration 00010 writes the marks it carries over the same
	// way).
	sentLayout = "2006-01-02T15:04:05.000Z"
)

// The relay's queries. Both search the primary key above the sent mark:
// sent rows, however many, are never visited
// (TestRelayQueriesSkipSentRows).
const (
	pendingEventsSQL = "SELECT seq, id, subject, type, resource_id, time, data FROM outbox WHERE " + unsentAfterCond + " ORDER BY seq LIMIT ?"
	pendingCountSQL  = "SELECT count(*) FROM outbox WHERE " + unsentCond
	// pendingKeysSQL names the window in one row: how many rows, and
	// "<seq>:<id bytes>:<id>" for each, comma separated (an encoding with
	// one reading, whatever the ids hold), in the subquery's seq order.
	// (Were that order not kept, the keys would not match the cache and
	// the rows would be read: slower, never wrong.)
	pendingKeysSQL = "SELECT count(*), coalesce(group_concat(seq || ':' || octet_length(id) || ':' || id, ','), '') " +
		"FROM (SELECT seq, id FROM outbox WHERE " + unsentAfterCond + " ORDER BY seq LIMIT ?)"
	// pendingSpanSQL names the window by its size and its first and last
	// seq. When those span exactly as many seqs as there are rows, the
	// window is that run of seqs. A seq names one row for good (it is
	// never reused), so the cache's rows of those seqs are the window.
	pendingSpanSQL = "SELECT count(*), coalesce(min(seq), 0), coalesce(max(seq), 0) " +
		"FROM (SELECT seq FROM outbox WHERE " + unsentAfterCond + " ORDER BY seq LIMIT ?)"
)

// PendingEvents returns up to limit unsent outbox events in Seq order.
func (s *Store) PendingEvents(ctx context.Context, limit int) ([]findings.OutboxEvent, error) {
	return s.PendingEventsAfter(ctx, 0, limit)
}

// PendingEventsAfter returns up to limit unsent outbox events with a seq
// above after, in Seq order: the relay's next window while the previous
// one is still in flight. When this process enqueued them, it reads only
// the window's seqs and ids (one row) and takes the rows from the cache;
// otherwise (or when the cache lacks any) it reads the rows.
func (s *Store) PendingEventsAfter(ctx context.Context, after int64, limit int) ([]findings.OutboxEvent, error) {
	if !s.recent.empty() {
		var n int
		var first, last int64
		if err := s.db.QueryRowContext(ctx, pendingSpanSQL, after, limit).Scan(&n, &first, &last); err != nil {
			return nil, fmt.Errorf("pending events: %w", err)
		}
		if n == 0 {
			return nil, nil
		}
		if last-first+1 == int64(n) {
			if rows, ok := s.recent.span(first, n); ok {
				return rows, nil
			}
		} else {
			// A broken run of seqs (another writer's rows in between,
			// rows dropped): the window's ids name its rows.
			var keys string
			if err := s.db.QueryRowContext(ctx, pendingKeysSQL, after, limit).Scan(&n, &keys); err != nil {
				return nil, fmt.Errorf("pending events: %w", err)
			}
			if rows, ok := s.recent.window(n, keys); ok {
				return rows, nil
			}
		}
	}
	return s.readPending(ctx, after, limit)
}

func (s *Store) readPending(ctx context.Context, after int64, limit int) ([]findings.OutboxEvent, error) {
	rows, err := s.db.QueryContext(ctx, pendingEventsSQL, after, limit)
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

// MarkSent records that events were acknowledged by JetStream: seqs, in
// ascending order, are the oldest unsent rows (a prefix of what
// PendingEvents returned). It writes one mark, the last seq; seqs at or
// below the current mark are already sent. An unsent row below the last
// seq that is not in seqs would be marked without its ack, so it is
// refused, naming the row, and nothing is marked.
func (s *Store) MarkSent(ctx context.Context, seqs []int64, at time.Time) error {
	if len(seqs) == 0 {
		return nil
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] <= seqs[i-1] {
			return fmt.Errorf("mark sent: seqs must ascend, got %d after %d", seqs[i], seqs[i-1])
		}
	}
	first, last := seqs[0], seqs[len(seqs)-1]
	// One statement: the mark, written only if it moves and no unsent row
	// up to it is missing from seqs. When seqs are an unbroken run (a
	// window of this process's rows), a missing row can only be below it,
	// and the seqs are not listed.
	var res sql.Result
	var err error
	if last-first+1 == int64(len(seqs)) {
		res, err = s.db.ExecContext(ctx, markSentSpanSQL, last, at.UTC().Format(sentLayout), first)
	} else {
		res, err = s.db.ExecContext(ctx, markSentSQL, last, at.UTC().Format(sentLayout), seqList(seqs))
	}
	if err != nil {
		return fmt.Errorf("mark sent: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		// Not written: already marked, or a row is missing (say which).
		var mark int64
		var skipped sql.NullInt64
		if err := s.db.QueryRowContext(ctx, "SELECT "+sentMarkSQL+", (SELECT min(seq) FROM outbox WHERE "+unsentCond+" AND seq <= ? AND seq NOT IN (SELECT value FROM json_each(?)))",
			last, seqList(seqs)).Scan(&mark, &skipped); err != nil {
			return fmt.Errorf("mark sent: %w", err)
		}
		if last > mark && skipped.Valid {
			return fmt.Errorf("mark sent through seq %d: unsent seq %d is not among the acknowledged", last, skipped.Int64)
		}
		if last > mark {
			return fmt.Errorf("mark sent through seq %d: not written", last)
		}
	}
	s.recent.dropThrough(last)
	return nil
}

// markSentSQL writes the mark ?1 (at ?2) when it is above the current one
// and every unsent row up to it is in ?3 (a JSON array of seqs).
const markSentSQL = markSentUnlessSQL + "seq <= ?1 AND seq NOT IN (SELECT value FROM json_each(?3)))"

// markSentUnlessSQL writes the mark ?1 (at ?2) when it is above the
// current one and no unsent row meets the condition that follows it
// (closed with a parenthesis).
const markSentUnlessSQL = "INSERT INTO outbox_sent (seq, sent_at) SELECT ?1, ?2 WHERE ?1 > " + sentMarkSQL +
	" AND NOT EXISTS (SELECT 1 FROM outbox WHERE " + unsentCond + " AND "

// markSentSpanSQL is markSentSQL for the unbroken run of seqs ?3..?1: every
// row of the run is acknowledged, so an unsent row missing from it is one
// below ?3.
const markSentSpanSQL = markSentUnlessSQL + "seq < ?3)"

// seqList is seqs as a JSON array, for json_each.
func seqList(seqs []int64) string {
	b := make([]byte, 0, 8*len(seqs)+2)
	b = append(b, '[')
	for i, q := range seqs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, q, 10)
	}
	return string(append(b, ']'))
}

// PruneSent deletes the events sent before before: the rows up to the
// last mark of a window sent before it, and with no younger mark below
// (a clock set back never prunes a younger window). The highest mark
// stays, it is what tells the unsent rows from the pruned ones.
func (s *Store) PruneSent(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		var cut sql.NullInt64
		err := tx.QueryRowContext(ctx, "SELECT max(seq) FROM outbox_sent WHERE seq < coalesce((SELECT min(seq) FROM outbox_sent WHERE sent_at >= ?), 9223372036854775807)",
			before.UTC().Format(sentLayout)).Scan(&cut)
		if err != nil || !cut.Valid {
			return err
		}
		res, err := tx.ExecContext(ctx, "DELETE FROM outbox WHERE seq <= ?", cut.Int64)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		_, err = tx.ExecContext(ctx, "DELETE FROM outbox_sent WHERE seq < ?", cut.Int64)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune outbox: %w", err)
	}
	return n, nil
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
// Rows are inserted enqueueChunk at a time, one statement each. Once
// committed, the rows are handed to the relay's cache (outboxCache), as
// PendingEvents would read them back.
func (s *Store) Enqueue(ctx context.Context, rows ...findings.OutboxEvent) error {
	var committed []findings.OutboxEvent
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		committed = make([]findings.OutboxEvent, 0, len(rows))
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
			first := len(committed)
			for _, r := range chunk {
				data, err := storedData(r)
				if err != nil {
					return err
				}
				at := fmtTime(r.Time)
				args = append(args, r.ID, r.Subject, r.Type, r.ResourceID, at, data)
				committed = append(committed, findings.OutboxEvent{ID: r.ID, Subject: r.Subject, Type: r.Type, ResourceID: r.ResourceID,
					Time: parseTime(at), Data: json.RawMessage(bytes.Clone(data))})
			}
			var res sql.Result
			var err error
			if len(chunk) == enqueueChunk {
				if full == nil {
					if full, err = tx.PrepareContext(ctx, enqueueSQL(enqueueChunk)); err != nil {
						return err
					}
				}
				res, err = full.ExecContext(ctx, args...)
			} else {
				res, err = tx.ExecContext(ctx, enqueueSQL(len(chunk)), args...)
			}
			if err != nil {
				return fmt.Errorf("enqueue %s..%s: %w", chunk[0].ID, chunk[len(chunk)-1].ID, err)
			}
			// One statement's rows get consecutive seqs ending at the
			// last insert id. When some were skipped (ids already there),
			// which seq went to which row is not known, so the chunk is
			// not cached. (The relay's read checks ids against the
			// database anyway.)
			n, nerr := res.RowsAffected()
			last, lerr := res.LastInsertId()
			if nerr != nil || lerr != nil || n != int64(len(chunk)) {
				committed = committed[:first]
				continue
			}
			for k := range chunk {
				committed[first+k].Seq = last - int64(len(chunk)-1-k)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.recent.add(committed)
	return nil
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

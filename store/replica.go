package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/patrold/patrold/contracts"
)

// Tables that are never replicated: the outbox and the replica's own
// bookkeeping are per instance, run_list and findings_version are derived
// by triggers (each instance counts its own changes to findings), goose's
// version table belongs to migrations.
var replicaSkipTables = map[string]bool{"outbox": true, "outbox_sent": true, "replica_state": true, "run_list": true,
	"findings_version": true, "goose_db_version": true}

// Columns that stay on the instance that wrote them: whole run reports,
// model exchanges and session transcripts can be megabytes, over a NATS
// message's size. A standby keeps their defaults.
var replicaSkipColumns = map[string]bool{"runs.report": true, "runs.exchange": true,
	"remediation_sessions.transcript": true, "remediation_sessions.exchange": true}

// captureTouch runs update (the touch of the findings in the JSON object
// raised: id to times raised) and, when this database captures, replicates it as one numbered
// touch change instead of one row image per finding: the row triggers are
// held off for the update (applying = 1) and the change is queued in the
// same transaction.
func captureTouch(ctx context.Context, tx *sql.Tx, raised []byte, lastSeen, runID string, update func() error) error {
	var capture, applying int
	var subject, origin string
	var epoch, changes int64
	err := tx.QueryRowContext(ctx, "SELECT capture, applying, subject, origin, epoch, changes FROM replica_state WHERE id = 1").
		Scan(&capture, &applying, &subject, &origin, &epoch, &changes)
	if err != nil {
		return err
	}
	if capture != 1 || applying != 0 {
		return update()
	}
	if _, err := tx.ExecContext(ctx, "UPDATE replica_state SET applying = 1 WHERE id = 1"); err != nil {
		return err
	}
	if err := update(); err != nil {
		return err
	}
	seen, _ := json.Marshal(lastSeen)
	run, _ := json.Marshal(runID)
	if _, err := tx.ExecContext(ctx, "UPDATE replica_state SET applying = 0, changes = changes + 1 WHERE id = 1"); err != nil {
		return err
	}
	return queueStateChange(ctx, tx, subject, contracts.StateChange{Origin: origin, Epoch: uint64(epoch), N: uint64(changes) + 1, Table: "findings",
		Op: contracts.OpTouch, Row: map[string]json.RawMessage{"raised": raised, "last_seen_at": seen, "last_run_id": run}})
}

// queueStateChange writes a state change the store makes itself (not a
// capture trigger's row image) into the outbox, as the triggers do: its
// table as the resource, none for the epoch marker.
func queueStateChange(ctx context.Context, tx *sql.Tx, subject string, c contracts.StateChange) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	resource := c.Table
	if resource == contracts.SkipTable {
		resource = ""
	}
	_, err = tx.ExecContext(ctx, "INSERT INTO outbox (id, subject, type, resource_id, time, data) VALUES ('st-' || lower(hex(randomblob(16))), ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), ?)",
		subject, contracts.TypeStateChange, resource, string(data))
	return err
}

// applyTouch applies a touch change (the writer's update on its ids).
func applyTouch(ctx context.Context, tx *sql.Tx, c contracts.StateChange) error {
	var lastSeen, runID string
	if err := json.Unmarshal(c.Row["last_seen_at"], &lastSeen); err != nil {
		return fmt.Errorf("row.last_seen_at: %w", err)
	}
	if err := json.Unmarshal(c.Row["last_run_id"], &runID); err != nil {
		return fmt.Errorf("row.last_run_id: %w", err)
	}
	return touchRows(ctx, tx, c.Row["raised"], lastSeen, runID)
}

type tableInfo struct {
	cols []string
	pk   []string // declared primary key columns; empty: the rowid
}

// replicaTables reads the replicated tables and their columns from the
// schema.
func replicaTables(ctx context.Context, q querier) (map[string]tableInfo, error) {
	rows, err := q.QueryContext(ctx, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
	if err != nil {
		return nil, err
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, err
		}
		if !replicaSkipTables[n] {
			names = append(names, n)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make(map[string]tableInfo, len(names))
	for _, n := range names {
		ti, err := replicaTable(ctx, q, n)
		if err != nil {
			return nil, err
		}
		out[n] = ti
	}
	return out, nil
}

// replicaTable reads one table's replicated columns and primary key; a
// table that does not exist has no columns.
func replicaTable(ctx context.Context, q querier, n string) (tableInfo, error) {
	var ti tableInfo
	cr, err := q.QueryContext(ctx, "SELECT name, pk FROM pragma_table_info(?) ORDER BY cid", n)
	if err != nil {
		return ti, err
	}
	defer cr.Close()
	for cr.Next() {
		var c string
		var pk int
		if err := cr.Scan(&c, &pk); err != nil {
			return ti, err
		}
		if pk > 0 {
			ti.pk = append(ti.pk, c)
		}
		if !replicaSkipColumns[n+"."+c] {
			ti.cols = append(ti.cols, c)
		}
	}
	return ti, cr.Err()
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// EnableCapture switches this database to leader capture: every row change
// committed from now on (findings, their events, runs, operator actions,
// silences, suppressions, investigations, sessions, approvals, audit) is
// also written to the outbox, in the same transaction, as a state-change
// event on subject, naming origin and epoch. The same transaction queues
// the epoch marker, so the marker precedes every change this writer
// captures. The triggers are rebuilt from the current schema on every
// call.
func (s *Store) EnableCapture(ctx context.Context, subject, origin string, epoch uint64) error {
	if subject == "" || origin == "" || epoch == 0 {
		return errors.New("enable capture: subject, origin and epoch are required")
	}
	return s.withTx(ctx, func(tx *sql.Tx) error {
		tables, err := replicaTables(ctx, tx)
		if err != nil {
			return fmt.Errorf("enable capture: read schema: %w", err)
		}
		for t, ti := range tables {
			if err := createCaptureTriggers(ctx, tx, t, ti); err != nil {
				return fmt.Errorf("enable capture: triggers on %s: %w", t, err)
			}
		}
		// Numbering goes on from the last change applied, or from the
		// last this database captured when those are still to be published.
		if _, err = tx.ExecContext(ctx, "UPDATE replica_state SET capture = 1, applying = 0, subject = ?, origin = ?, epoch = ?, changes = max(changes, applied_n) WHERE id = 1",
			subject, origin, int64(epoch)); err != nil {
			return err
		}
		return queueStateChange(ctx, tx, subject, contracts.StateChange{Origin: origin, Epoch: epoch, Table: contracts.SkipTable, Op: contracts.OpEpoch})
	})
}

// ResumeNumbering continues the change numbering from the last change
// applied: a new writer calls it once its epoch marker is applied, when
// every change numbered before it (an old writer's last ones included) is.
func (s *Store) ResumeNumbering(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, "UPDATE replica_state SET changes = applied_n WHERE id = 1")
	return err
}

// DisableCapture stops writing state-change events (a standby).
func (s *Store) DisableCapture(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, "UPDATE replica_state SET capture = 0 WHERE id = 1")
	return err
}

func createCaptureTriggers(ctx context.Context, tx *sql.Tx, table string, ti tableInfo) error {
	var obj strings.Builder
	for i, c := range ti.cols {
		if i > 0 {
			obj.WriteString(", ")
		}
		fmt.Fprintf(&obj, "%s, NEW.%s", sqlString(c), quoteIdent(c))
	}
	ins := func(op, rowid, row string) string {
		return "INSERT INTO outbox (id, subject, type, resource_id, time, data) SELECT " +
			"'st-' || lower(hex(randomblob(16))), subject, '" + contracts.TypeStateChange + "', " + sqlString(table) + ", " +
			"strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), " +
			"json_object('origin', origin, 'epoch', epoch, 'n', changes + 1, 'table', " + sqlString(table) + ", 'op', '" + op + "', 'rowid', " + rowid + row + ") " +
			"FROM replica_state WHERE id = 1 AND capture = 1 AND applying = 0; " +
			"UPDATE replica_state SET changes = changes + 1 WHERE id = 1 AND capture = 1 AND applying = 0;"
	}
	row := ", 'row', json_object(" + obj.String() + ")"
	for _, tr := range []struct{ name, event, body string }{
		{"ins", "AFTER INSERT", ins("upsert", "NEW.rowid", row)},
		{"upd", "AFTER UPDATE", ins("upsert", "NEW.rowid", row)},
		{"del", "AFTER DELETE", ins("delete", "OLD.rowid", "")},
	} {
		name := quoteIdent("replica_" + table + "_" + tr.name)
		if _, err := tx.ExecContext(ctx, "DROP TRIGGER IF EXISTS "+name); err != nil {
			return err
		}
		q := "CREATE TRIGGER " + name + " " + tr.event + " ON " + quoteIdent(table) + " BEGIN " + tr.body + " END"
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// ReplicaStatus is what a replica has applied.
type ReplicaStatus struct {
	AppliedSeq    uint64
	AppliedAt     *time.Time
	AppliedOrigin string // who wrote the last change applied
	AppliedEpoch  uint64 // the highest writer epoch applied
	Fenced        uint64 // changes ignored as a deposed writer's
}

// ReplicaStatus returns the stream sequence applied last and when.
func (s *Store) ReplicaStatus(ctx context.Context) (ReplicaStatus, error) {
	var seq, epoch, fenced int64
	var at sql.NullString
	var origin string
	if err := s.db.QueryRowContext(ctx, "SELECT applied_seq, applied_at, applied_origin, applied_epoch, fenced FROM replica_state WHERE id = 1").Scan(&seq, &at, &origin, &epoch, &fenced); err != nil {
		return ReplicaStatus{}, fmt.Errorf("replica status: %w", err)
	}
	st := ReplicaStatus{AppliedSeq: uint64(seq), AppliedOrigin: origin, AppliedEpoch: uint64(epoch), Fenced: uint64(fenced)}
	if at.Valid {
		t := parseTime(at.String)
		st.AppliedAt = &t
	}
	return st, nil
}

// DropUnsent deletes the events still waiting in the outbox, except those
// of the types in keep, and returns how many went: a deposed writer's last
// commits, which a newer writer superseded (replaying their row images
// would overwrite newer rows; their finding events and requests would
// repeat what the newer writer published for the same findings).
func (s *Store) DropUnsent(ctx context.Context, keep ...string) (int64, error) {
	q := "DELETE FROM outbox WHERE " + unsentCond
	args := make([]any, 0, len(keep))
	if len(keep) > 0 {
		q += " AND type NOT IN (" + strings.TrimSuffix(strings.Repeat("?,", len(keep)), ",") + ")"
		for _, k := range keep {
			args = append(args, k)
		}
	}
	s.recent.reset()
	var n int64
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		// The dropped changes' numbers are free again.
		_, err = tx.ExecContext(ctx, "UPDATE replica_state SET changes = applied_n WHERE id = 1")
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("drop unsent events: %w", err)
	}
	return n, nil
}

// UnsentState counts the state-change events waiting in the outbox.
func (s *Store) UnsentState(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM outbox WHERE "+unsentCond+" AND type = ?", contracts.TypeStateChange).Scan(&n)
	return n, err
}

// Apply is what ApplyState did with a change.
type Apply int

// ApplyState results.
const (
	// ApplySkipped: the sequence was applied before (a redelivery).
	ApplySkipped Apply = iota
	// Applied: the change is in (or, written by self, already was).
	Applied
	// ApplyFenced: the change came from a writer of a lower epoch than one
	// already applied (deposed): only the sequence advanced.
	ApplyFenced
)

// ApplyState applies the state change at stream sequence seq, once: a
// sequence at or below the one applied last is skipped. A change written
// by self (this instance, as leader) only advances the sequence, and so
// does one of an epoch below the highest applied (fenced). An epoch
// marker raises the applied epoch. The change and the sequence commit
// together, and the capture triggers do not fire for it.
func (s *Store) ApplyState(ctx context.Context, seq uint64, self string, c contracts.StateChange, now time.Time) (Apply, error) {
	result := ApplySkipped
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		var last, epoch, appliedN int64
		if err := tx.QueryRowContext(ctx, "SELECT applied_seq, applied_epoch, applied_n FROM replica_state WHERE id = 1").Scan(&last, &epoch, &appliedN); err != nil {
			return err
		}
		if seq <= uint64(last) {
			return nil
		}
		fenced := c.Epoch < uint64(epoch) && !(c.Table == contracts.SkipTable && c.Op != contracts.OpEpoch)
		if c.N > 0 && !fenced && c.N != uint64(appliedN)+1 {
			return &GapError{Seq: seq, Want: uint64(appliedN) + 1, Got: c.N}
		}
		if c.N > 0 && !fenced {
			appliedN = int64(c.N)
		}
		origin := c.Origin
		switch {
		case c.Table == contracts.SkipTable && c.Op != contracts.OpEpoch:
			result, origin = Applied, "" // a refused change names nobody
		case c.Epoch < uint64(epoch):
			result, origin = ApplyFenced, ""
		case c.Op == contracts.OpEpoch:
			result = Applied
		case c.Origin != self:
			result = Applied
			if _, err := tx.ExecContext(ctx, "UPDATE replica_state SET applying = 1 WHERE id = 1"); err != nil {
				return err
			}
			apply := applyChange
			if c.Op == contracts.OpTouch {
				apply = applyTouch
			}
			if err := apply(ctx, tx, c); err != nil {
				return err
			}
		default:
			result = Applied
		}
		newEpoch := max(uint64(epoch), c.Epoch)
		if result == ApplyFenced {
			newEpoch = uint64(epoch)
		}
		_, err := tx.ExecContext(ctx, `UPDATE replica_state SET applying = 0, applied_seq = ?, applied_at = ?,
			applied_origin = CASE WHEN ? = '' THEN applied_origin ELSE ? END, applied_epoch = ?, fenced = fenced + ?, applied_n = ? WHERE id = 1`,
			int64(seq), fmtTime(now), origin, origin, int64(newEpoch), boolInt(result == ApplyFenced), appliedN)
		return err
	})
	if err != nil {
		return ApplySkipped, fmt.Errorf("apply state seq %d (%s %s rowid %d): %w", seq, c.Op, c.Table, c.RowID, err)
	}
	return result, nil
}

// GapError: the change at stream sequence Seq is number Got, but the
// database applied up to Want-1: the changes between are no longer on the
// stream (aged out by nats.stream.max_age or max_bytes before this replica
// read them). Nothing is applied; the replica must be re-seeded.
type GapError struct {
	Seq       uint64
	Want, Got uint64
}

func (e *GapError) Error() string {
	return fmt.Sprintf("state changes %d..%d are missing from the stream (next on it: %d at seq %d): this database cannot catch up; re-seed it (patrold db seed)",
		e.Want, e.Got-1, e.Got, e.Seq)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func applyChange(ctx context.Context, tx *sql.Tx, c contracts.StateChange) error {
	if replicaSkipTables[c.Table] || strings.HasPrefix(c.Table, "sqlite_") {
		return fmt.Errorf("table: %q is not a replicated table", c.Table)
	}
	ti, err := replicaTable(ctx, tx, c.Table)
	if err != nil {
		return err
	}
	if len(ti.cols) == 0 {
		return fmt.Errorf("table: %q is not a replicated table", c.Table)
	}
	t := quoteIdent(c.Table)
	if c.Op == "delete" {
		_, err := tx.ExecContext(ctx, "DELETE FROM "+t+" WHERE rowid = ?", c.RowID)
		return err
	}
	cols := make([]string, 0, len(c.Row))
	for k := range c.Row {
		if !slices.Contains(ti.cols, k) {
			return fmt.Errorf("row.%s: not a replicated column of %s", k, c.Table)
		}
		cols = append(cols, k)
	}
	slices.Sort(cols)
	args := make([]any, 0, len(cols)+1)
	sets := make([]string, 0, len(cols))
	for _, k := range cols {
		v, err := sqlValue(c.Row[k])
		if err != nil {
			return fmt.Errorf("row.%s: %w", k, err)
		}
		args = append(args, v)
		sets = append(sets, quoteIdent(k)+" = ?")
	}
	// Rows that moved to another rowid (a REPLACE on the leader) are
	// removed by primary key first, so the rowid stays the leader's.
	if len(ti.pk) > 0 {
		var where []string
		var pkArgs []any
		for _, k := range ti.pk {
			raw, ok := c.Row[k]
			if !ok {
				return fmt.Errorf("row.%s: primary key column missing", k)
			}
			v, _ := sqlValue(raw)
			where = append(where, quoteIdent(k)+" = ?")
			pkArgs = append(pkArgs, v)
		}
		pkArgs = append(pkArgs, c.RowID)
		if _, err := tx.ExecContext(ctx, "DELETE FROM "+t+" WHERE "+strings.Join(where, " AND ")+" AND rowid <> ?", pkArgs...); err != nil {
			return err
		}
	}
	res, err := tx.ExecContext(ctx, "UPDATE "+t+" SET "+strings.Join(sets, ", ")+" WHERE rowid = ?", append(args, c.RowID)...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	qcols := make([]string, 0, len(cols)+1)
	for _, k := range cols {
		qcols = append(qcols, quoteIdent(k))
	}
	qcols = append(qcols, "rowid")
	_, err = tx.ExecContext(ctx, "INSERT INTO "+t+" ("+strings.Join(qcols, ", ")+") VALUES ("+
		strings.TrimSuffix(strings.Repeat("?, ", len(qcols)), ", ")+")", append(args, c.RowID)...)
	return err
}

// sqlValue turns a JSON value made by json_object back into what SQLite
// stored: text, an integer, a real or NULL.
func sqlValue(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case nil, string:
		return x, nil
	case json.Number:
		if i, err := x.Int64(); err == nil && !strings.ContainsAny(x.String(), ".eE") {
			return i, nil
		}
		return x.Float64()
	}
	return nil, fmt.Errorf("a %T is not a column value", v)
}

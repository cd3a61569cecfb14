package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/patrold/patrold/contracts"
)

// Capture: the writer's side of replication. While capture is on, every
// committed row change is also written to the outbox as a state change,
// in the same transaction; see docs/CLUSTER.md.

// Tables that are never replicated: the outbox and the replica's own
// bookkeeping are per instance, run_list and findings_version are derived
// by triggers (each instance counts its own changes to findings), goose's
// version table belongs to migrations. Usage history (its points, and
// usage_series and usage_version, derived from them by triggers) is each
// instance's own (a standby records its own once it runs), and so are a
// source's kept reads (source_copies: another instance reads again).
var replicaSkipTables = map[string]bool{"outbox": true, "outbox_sent": true, "replica_state": true, "run_list": true,
	"findings_version": true, "goose_db_version": true, "usage_points": true,
	"usage_series": true, "usage_version": true, "source_copies": true}

// Columns that stay on the instance that wrote them: whole run reports,
// model exchanges and session transcripts can be megabytes, over a NATS
// message's size. A standby keeps their defaults.
var replicaSkipColumns = map[string]bool{"runs.report": true, "runs.exchange": true,
	"remediation_sessions.transcript": true, "remediation_sessions.exchange": true}

// captureTouch runs update, the touch of the findings in the JSON object
// raised (id to times raised). When this database captures, it replicates
// the update as one numbered touch change instead of one row image per
// finding. The row triggers are held off for the update (applying = 1),
// and the change is queued in the same transaction.
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

// EnableCapture switches this database to leader capture. Every row
// change committed from now on is also written to the outbox, in the same
// transaction, as a state-change event on subject, naming origin and
// epoch. That covers findings, their events, runs, operator actions,
// silences, suppressions, investigations, sessions, approvals and audit.
// The same transaction queues the epoch marker, so the marker precedes
// every change this writer captures. The triggers are rebuilt from the
// current schema on every call.
func (s *Store) EnableCapture(ctx context.Context, subject, origin string, epoch uint64) error {
	if subject == "" || origin == "" || epoch == 0 {
		return errors.New("enable capture: subject, origin and epoch are required")
	}
	return s.withTx(ctx, func(tx *sql.Tx) error {
		var ownSince uint64
		if err := tx.QueryRowContext(ctx, "SELECT own_since FROM replica_state WHERE id = 1").Scan(&ownSince); err != nil {
			return fmt.Errorf("enable capture: %w", err)
		}
		//mutate:capture-from-own-since ./store ^TestReseedRefusedWhileCapturing$
		if epoch < ownSince {
			// Its changes of that epoch from before a re-seed are not in
			// its rows: new ones under the same epoch would be told apart
			// from them by nothing.
			return fmt.Errorf("enable capture: epoch %d is below %d, the first this database may capture in since its re-seed", epoch, ownSince)
		}
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
		// Text goes in as a string, whatever made it: a JSON function's
		// result (json_object) would go in as an object, which no
		// replica can store as a column value.
		q := "NEW." + quoteIdent(c)
		fmt.Fprintf(&obj, "%s, CASE typeof(%s) WHEN 'text' THEN %s || '' ELSE %s END", sqlString(c), q, q, q)
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
		{"ins", "AFTER INSERT", ins(contracts.OpUpsert, "NEW.rowid", row)},
		{"upd", "AFTER UPDATE", ins(contracts.OpUpsert, "NEW.rowid", row)},
		{"del", "AFTER DELETE", ins(contracts.OpDelete, "OLD.rowid", "")},
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

// DropUnsent deletes the events still waiting in the outbox, except those
// of the types in keep, and returns how many went. They are a deposed
// writer's last commits, which a newer writer superseded. Replaying their
// row images would overwrite newer rows. Their finding events and
// requests would repeat what the newer writer published for the same
// findings.
func (s *Store) DropUnsent(ctx context.Context, keep ...string) (int64, error) {
	cond, args := unsentExcept(keep)
	q := "DELETE FROM outbox WHERE " + cond
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

// unsentExcept is the condition (and its arguments) that selects the
// unsent outbox events whose type is not in keep.
func unsentExcept(keep []string) (string, []any) {
	cond := unsentCond
	args := make([]any, 0, len(keep))
	if len(keep) > 0 {
		cond += " AND type NOT IN (" + strings.TrimSuffix(strings.Repeat("?,", len(keep)), ",") + ")"
		for _, k := range keep {
			args = append(args, k)
		}
	}
	return cond, args
}

// UnsentState counts the state-change events waiting in the outbox.
func (s *Store) UnsentState(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM outbox WHERE "+unsentCond+" AND type = ?", contracts.TypeStateChange).Scan(&n)
	return n, err
}

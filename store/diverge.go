package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/store/records"
)

// Divergence: a writer that restarts with unsent state changes after
// another instance wrote holds rows the stream never got. The cluster
// drops those changes from the outbox and records the divergence here,
// in the same transaction, so that a second restart still knows. Reseed
// ends it. See docs/CLUSTER.md.

// DropDiverged deletes the events still waiting in the outbox, except
// those of the types in keep, and records the divergence (lastWriter is
// the instance that wrote since; now is when) in one transaction. The
// dropped changes' numbers are free again. It returns the divergence
// recorded, with the rows dropped now added to one recorded before.
func (s *Store) DropDiverged(ctx context.Context, lastWriter string, now time.Time, keep ...string) (records.Divergence, error) {
	if lastWriter == "" {
		return records.Divergence{}, errors.New("drop diverged: lastWriter is required")
	}
	cond, args := unsentExcept(keep)
	s.recent.reset()
	var d records.Divergence
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		var err error
		if d, err = readDivergence(ctx, tx); err != nil {
			return err
		}
		if !d.Diverged() {
			d = records.Divergence{Since: now.UTC(), LastWriter: lastWriter}
		}
		rows, err := tx.QueryContext(ctx, "SELECT type, resource_id, data FROM outbox WHERE "+cond+" ORDER BY seq", args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var typ, resource string
			var data []byte
			if err := rows.Scan(&typ, &resource, &data); err != nil {
				rows.Close()
				return err
			}
			d.Count++
			if len(d.Rows) < records.MaxDroppedRows {
				d.Rows = append(d.Rows, droppedRow(typ, resource, data))
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM outbox WHERE "+cond, args...); err != nil {
			return err
		}
		mark, _ := json.Marshal(d)
		_, err = tx.ExecContext(ctx, "UPDATE replica_state SET changes = applied_n, diverged = ? WHERE id = 1", string(mark))
		return err
	})
	if err != nil {
		return records.Divergence{}, fmt.Errorf("drop diverged events: %w", err)
	}
	return d, nil
}

// droppedRow names one dropped outbox event: a state change by its table,
// operation and row id, any other event by its type and resource.
func droppedRow(typ, resource string, data []byte) records.DroppedRow {
	if typ != contracts.TypeStateChange {
		return records.DroppedRow{Kind: typ, ID: resource}
	}
	var c contracts.StateChange
	if err := json.Unmarshal(data, &c); err != nil {
		return records.DroppedRow{Kind: typ, ID: resource}
	}
	return changeRow(c)
}

// changeRow names one state change by its table, operation and row id.
func changeRow(c contracts.StateChange) records.DroppedRow {
	kind := c.Op
	if c.Table != contracts.SkipTable {
		kind = c.Table + " " + c.Op
	}
	id := strconv.FormatInt(c.RowID, 10)
	var s string
	if raw, ok := c.Row["id"]; ok && json.Unmarshal(raw, &s) == nil && s != "" {
		id = s
	}
	if c.Op == contracts.OpEpoch || c.Op == contracts.OpTouch {
		id = ""
	}
	return records.DroppedRow{Kind: kind, ID: id}
}

// recordFenced records, in ApplyState's transaction, that this
// instance's own change c was fenced: it wrote as a deposed writer, so
// its rows hold a change no other replica applied. The instance that
// wrote the fencing epoch is the last writer.
func recordFenced(ctx context.Context, tx *sql.Tx, now time.Time, c contracts.StateChange) error {
	d, err := readDivergence(ctx, tx)
	if err != nil {
		return err
	}
	if !d.Diverged() {
		var last string
		if err := tx.QueryRowContext(ctx, "SELECT applied_origin FROM replica_state WHERE id = 1").Scan(&last); err != nil {
			return err
		}
		if last == "" {
			last = "a writer of a later epoch"
		}
		d = records.Divergence{Since: now.UTC(), LastWriter: last}
	}
	d.Fenced++
	if len(d.FencedRows) < records.MaxDroppedRows {
		d.FencedRows = append(d.FencedRows, changeRow(c))
	}
	mark, _ := json.Marshal(d)
	_, err = tx.ExecContext(ctx, "UPDATE replica_state SET diverged = ? WHERE id = 1", string(mark))
	return err
}

// Divergence is the divergence recorded (zero: none).
func (s *Store) Divergence(ctx context.Context) (records.Divergence, error) {
	return readDivergence(ctx, s.db)
}

func readDivergence(ctx context.Context, q querier) (records.Divergence, error) {
	var raw string
	if err := q.QueryRowContext(ctx, "SELECT diverged FROM replica_state WHERE id = 1").Scan(&raw); err != nil {
		return records.Divergence{}, fmt.Errorf("replica divergence: %w", err)
	}
	var d records.Divergence
	if raw == "" {
		return d, nil
	}
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		return records.Divergence{}, fmt.Errorf("replica divergence: %w", err)
	}
	return d, nil
}

// VerifyCopy opens the database copy at path (migrating it to this
// patrold's schema) and runs the quick integrity check.
func VerifyCopy(ctx context.Context, path string) error {
	st, err := Open(ctx, path)
	if err != nil {
		return err
	}
	return errors.Join(st.Check(ctx, false), st.Close())
}

// Reseed replaces this database's rows with those of the seed copy at
// path (SeedCopy's, from a caught-up instance), in place, in one
// transaction: readers see the old rows or the new, never a mix. So a
// running daemon re-seeds itself without closing the store.
//   - The copy is verified first (VerifyCopy) and must be at this
//     database's schema version and carry no divergence itself.
//   - Every replicated table is emptied and filled from the copy, rowids
//     included (state changes name rows by rowid); derived tables follow
//     by their triggers.
//   - The replica position (sequence, epoch, change number, last writer)
//     becomes the copy's, capture is off and the divergence is cleared.
//   - Its own changes still on their way are no longer in its rows:
//     own_since rises above every epoch it captured in, so they apply
//     like any writer's.
//   - A database that captures (its instance is the writer) is refused:
//     the writer steps down first.
//   - The outbox (events still to publish: kept remediation outcomes),
//     usage history and the schema's own version stay this database's.
//
// It returns the new replica status.
func (s *Store) Reseed(ctx context.Context, path string) (records.ReplicaStatus, error) {
	fail := func(err error) (records.ReplicaStatus, error) {
		return records.ReplicaStatus{}, fmt.Errorf("reseed from %s: %w", path, err)
	}
	if err := VerifyCopy(ctx, path); err != nil {
		return fail(err)
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fail(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "ATTACH DATABASE ? AS seed", path); err != nil {
		return fail(err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "DETACH DATABASE seed") //nolint:errcheck // the connection closes next
	if err := s.reseedTx(ctx, conn); err != nil {
		return fail(err)
	}
	s.notifyCommit()
	return s.ReplicaStatus(ctx)
}

func (s *Store) reseedTx(ctx context.Context, conn *sql.Conn) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var mine, theirs, capture int64
	var diverged string
	if err := tx.QueryRowContext(ctx, "SELECT (SELECT max(version_id) FROM main.goose_db_version), (SELECT max(version_id) FROM seed.goose_db_version), "+
		"(SELECT diverged FROM seed.replica_state WHERE id = 1), (SELECT capture FROM main.replica_state WHERE id = 1)").Scan(&mine, &theirs, &diverged, &capture); err != nil {
		return fmt.Errorf("read the copy: %w", err)
	}
	switch {
	//mutate:reseed-never-under-writer ./store ^TestReseedRefusedWhileCapturing$
	case capture == 1:
		// The copy comes with capture off: a writer on it would answer
		// changes no other instance ever gets.
		return errors.New("this database captures state changes (its instance writes): stop writing first")
	case mine != theirs:
		return fmt.Errorf("the copy is at schema version %d, this database at %d", theirs, mine)
	case diverged != "":
		return errors.New("the copy is itself diverged")
	}
	for _, q := range []string{"PRAGMA defer_foreign_keys = ON", "UPDATE main.replica_state SET applying = 1 WHERE id = 1"} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	tables, err := replicaTables(ctx, tx)
	if err != nil {
		return err
	}
	// Every table is emptied before any is filled: a delete cascades to
	// the rows that reference it.
	for t := range tables {
		if _, err := tx.ExecContext(ctx, "DELETE FROM main."+quoteIdent(t)); err != nil {
			return fmt.Errorf("empty %s: %w", t, err)
		}
	}
	for t := range tables {
		cols, err := allColumns(ctx, tx, t)
		if err != nil {
			return err
		}
		qt, list := quoteIdent(t), "rowid, "+strings.Join(cols, ", ")
		if _, err := tx.ExecContext(ctx, "INSERT INTO main."+qt+" ("+list+") SELECT "+list+" FROM seed."+qt); err != nil {
			return fmt.Errorf("fill %s: %w", t, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE main.replica_state SET (capture, applying, subject, origin, epoch, applied_seq, applied_at,
		applied_origin, applied_epoch, applied_n, changes, diverged, stream_created) = (SELECT 0, 0, '', '', 0, applied_seq, applied_at,
		applied_origin, applied_epoch, applied_n, applied_n, '', stream_created FROM seed.replica_state WHERE id = 1),
		own_since = max(own_since, epoch + 1) WHERE id = 1`); err != nil {
		return err
	}
	return tx.Commit()
}

// allColumns lists every column of main's table t, quoted.
func allColumns(ctx context.Context, q querier, t string) ([]string, error) {
	rows, err := q.QueryContext(ctx, "SELECT name FROM pragma_table_info(?, 'main') ORDER BY cid", t)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		out = append(out, quoteIdent(c))
	}
	return out, rows.Err()
}

package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/store/records"
)

// Apply: a replica's side of replication. Each state change from the
// stream is applied once, in stream order, in one transaction with the
// sequence it came at; see docs/CLUSTER.md.

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

// ReplicaStatus returns the stream sequence applied last and when.
func (s *Store) ReplicaStatus(ctx context.Context) (records.ReplicaStatus, error) {
	var seq, epoch, fenced, ownSince int64
	var at sql.NullString
	var origin string
	if err := s.db.QueryRowContext(ctx, "SELECT applied_seq, applied_at, applied_origin, applied_epoch, fenced, own_since FROM replica_state WHERE id = 1").
		Scan(&seq, &at, &origin, &epoch, &fenced, &ownSince); err != nil {
		return records.ReplicaStatus{}, fmt.Errorf("replica status: %w", err)
	}
	st := records.ReplicaStatus{AppliedSeq: uint64(seq), AppliedOrigin: origin, AppliedEpoch: uint64(epoch), Fenced: uint64(fenced),
		OwnSince: uint64(ownSince)}
	if at.Valid {
		t := parseTime(at.String)
		st.AppliedAt = &t
	}
	return st, nil
}

// ApplyState applies the state change at stream sequence seq, once: a
// sequence at or below the one applied last is skipped, unless it is
// the next numbered change (one the follower read ahead of its turn,
// applied without moving the sequence back). A change this database
// captured (written by self, as leader, in an epoch since its last
// re-seed) only advances the sequence, and so does one of an epoch
// below the highest applied (fenced). A fenced change it captured is
// also recorded as a divergence (Divergence):
// this database holds it, no other replica does. An epoch
// marker raises the applied epoch. The change and the sequence commit
// together, and the capture triggers do not fire for it.
func (s *Store) ApplyState(ctx context.Context, seq uint64, self string, c contracts.StateChange, now time.Time) (records.Apply, error) {
	result := records.ApplySkipped
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		var last, epoch, appliedN, ownSince int64
		if err := tx.QueryRowContext(ctx, "SELECT applied_seq, applied_epoch, applied_n, own_since FROM replica_state WHERE id = 1").
			Scan(&last, &epoch, &appliedN, &ownSince); err != nil {
			return err
		}
		// This database holds its own change only when it captured it
		// since its last re-seed: the copy replaced the rows its changes
		// still on their way had made.
		own := c.Origin == self
		//mutate:own-only-since-reseed ./cluster ^TestReseededOwnChangesApply$
		if c.Epoch < uint64(ownSince) {
			own = false
		}
		fenced := c.Epoch < uint64(epoch) && !(c.Table == contracts.SkipTable && c.Op != contracts.OpEpoch)
		duplicate := func() error {
			result = records.ApplyDuplicate
			_, err := tx.ExecContext(ctx, "UPDATE replica_state SET applied_seq = max(applied_seq, ?), applied_at = ? WHERE id = 1", int64(seq), fmtTime(now))
			return err
		}
		if seq <= uint64(last) && (c.N == 0 || fenced || c.N != uint64(appliedN)+1) {
			// Applied before. A numbered change the follower held back
			// behind a missing earlier number is the exception: the next
			// number applies here, without moving the sequence back.
			return nil
		}
		//mutate:republished-applies-once ./cluster ^TestRepublishedChangeAppliesOnce$
		if c.Republished && c.N > 0 && !fenced && c.N <= uint64(appliedN) && c.Epoch == uint64(epoch) {
			// A number applied before, in this epoch, that its writer
			// published again (the stream had lost it, or so it seemed).
			// Applied again it would undo the changes since: the sequence
			// moves only. Any other number below the next is a gap, but
			// for one of its own (below).
			return duplicate()
		}
		//mutate:own-number-again-applies-once ./cluster ^TestReseededOwnChangesApply$
		if own && c.N > 0 && !fenced && c.N <= uint64(appliedN) {
			// Its rows hold it: applied from its own record while the
			// stream stored it late, or sent again into a stream created
			// again.
			return duplicate()
		}
		//mutate:numbered-changes-gap ./cluster ^TestReplicaNoticesMissingChanges$
		if c.N > 0 && !fenced && c.N != uint64(appliedN)+1 {
			return &records.GapError{Seq: seq, Want: uint64(appliedN) + 1, Got: c.N}
		}
		if c.N > 0 && !fenced {
			appliedN = int64(c.N)
		}
		origin := c.Origin
		switch {
		case c.Table == contracts.SkipTable && c.Op != contracts.OpEpoch:
			result, origin = records.Applied, "" // a refused change names nobody
		//mutate:fence-lower-epoch ./cluster ^TestDeposedWriterIsFenced$
		case c.Epoch < uint64(epoch):
			result, origin = records.ApplyFenced, ""
			//mutate:fenced-own-change-recorded ./cluster ^TestResumedWriterReseedsItself$
			if own && c.Op != contracts.OpEpoch {
				// This instance's own rows hold the change: diverged.
				if err := recordFenced(ctx, tx, now, c); err != nil {
					return err
				}
				result = records.ApplyFencedOwn
			}
		case c.Op == contracts.OpEpoch:
			result = records.Applied
		case !own:
			result = records.Applied
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
			result = records.Applied
		}
		fencedNow := result == records.ApplyFenced || result == records.ApplyFencedOwn
		newEpoch := max(uint64(epoch), c.Epoch)
		if fencedNow {
			newEpoch = uint64(epoch)
		}
		_, err := tx.ExecContext(ctx, `UPDATE replica_state SET applying = 0, applied_seq = max(applied_seq, ?), applied_at = ?,
			applied_origin = CASE WHEN ? = '' THEN applied_origin ELSE ? END, applied_epoch = ?, fenced = fenced + ?, applied_n = ? WHERE id = 1`,
			int64(seq), fmtTime(now), origin, origin, int64(newEpoch), boolInt(fencedNow), appliedN)
		return err
	})
	if err != nil {
		return records.ApplySkipped, fmt.Errorf("apply state seq %d (%s %s rowid %d): %w", seq, c.Op, c.Table, c.RowID, err)
	}
	s.boundWAL(ctx)
	return result, nil
}

// FollowStream records that the state stream, created at created
// (Unix nanoseconds), is the one the applied sequence counts in. When
// the database counted in another one (the stream was created again: its
// sequences start over), the applied sequence goes back to 0 and restart
// is true; the change numbers and epochs stay, and say what is new. The
// first stream recorded restarts nothing.
func (s *Store) FollowStream(ctx context.Context, created int64) (restart bool, err error) {
	err = s.withTx(ctx, func(tx *sql.Tx) error {
		var was int64
		if err := tx.QueryRowContext(ctx, "SELECT stream_created FROM replica_state WHERE id = 1").Scan(&was); err != nil {
			return err
		}
		if was == created {
			return nil
		}
		//mutate:recreated-stream-read-from-start ./cluster ^TestLostStreamIsCreatedAgain$
		restart = was != 0
		q := "UPDATE replica_state SET stream_created = ? WHERE id = 1"
		if restart {
			q = "UPDATE replica_state SET stream_created = ?, applied_seq = 0 WHERE id = 1"
		}
		_, err := tx.ExecContext(ctx, q, created)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("follow stream: %w", err)
	}
	return restart, nil
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
	if c.Op == contracts.OpDelete {
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

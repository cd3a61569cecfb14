package store

import (
	"context"
	"database/sql"
	"sync/atomic"
)

// CommitMark is the last outbox row the commits made under one context
// wrote (TrackCommits). An API answer waits for that row to reach the
// stream before it says the change is stored (docs/CLUSTER.md).
type CommitMark struct{ seq atomic.Int64 }

type commitMarkKey struct{}

// TrackCommits returns ctx carrying a new mark. Every commit of the store
// made under the returned context (or one derived from it) that wrote
// outbox rows raises the mark to the last of them.
func TrackCommits(ctx context.Context) (context.Context, *CommitMark) {
	m := &CommitMark{}
	return context.WithValue(ctx, commitMarkKey{}, m), m
}

// Seq is the highest outbox seq committed under the mark; 0 when none
// was.
func (m *CommitMark) Seq() int64 { return m.seq.Load() }

// raise moves the mark up to seq (never down).
func (m *CommitMark) raise(seq int64) {
	for {
		cur := m.seq.Load()
		if seq <= cur || m.seq.CompareAndSwap(cur, seq) {
			return
		}
	}
}

func markOf(ctx context.Context) *CommitMark {
	m, _ := ctx.Value(commitMarkKey{}).(*CommitMark)
	return m
}

// lastOutboxSeq is the highest seq the outbox ever held (seqs are never
// reused, so pruned rows still count).
func lastOutboxSeq(ctx context.Context, tx *sql.Tx) (int64, error) {
	var seq int64
	err := tx.QueryRowContext(ctx, "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'outbox'), 0)").Scan(&seq)
	return seq, err
}

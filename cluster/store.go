package cluster

import (
	"context"
	"time"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/store/records"
)

// Store is the database one instance replicates: package store's Store
// (pinned in the store's tests). Through it the cluster package never
// reaches SQL, nor links the SQLite driver.
type Store interface {
	// Capture (the writer).
	EnableCapture(ctx context.Context, subject, origin string, epoch uint64) error
	DisableCapture(ctx context.Context) error
	ResumeNumbering(ctx context.Context) error
	UnsentState(ctx context.Context) (int64, error)
	// Divergence (a restarted writer's unsent changes superseded).
	DropDiverged(ctx context.Context, lastWriter string, now time.Time, keep ...string) (records.Divergence, error)
	Divergence(ctx context.Context) (records.Divergence, error)
	Reseed(ctx context.Context, path string) (records.ReplicaStatus, error)
	// Apply (every instance).
	ApplyState(ctx context.Context, seq uint64, self string, c contracts.StateChange, now time.Time) (records.Apply, error)
	ReplicaStatus(ctx context.Context) (records.ReplicaStatus, error)
	// OwnRecord: state change n as this database captured it under
	// origin, once sent; capturing says this database writes now.
	OwnRecord(ctx context.Context, n uint64, origin string) (c contracts.StateChange, capturing, found bool, err error)
	// FollowStream: the stream created at created (Unix nanoseconds) is
	// the one followed; another than before resets the applied sequence.
	FollowStream(ctx context.Context, created int64) (restart bool, err error)
	// Seeding: a consistent copy of the database at path.
	SeedCopy(ctx context.Context, path string) (records.ReplicaStatus, error)
}

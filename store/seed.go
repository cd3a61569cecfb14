package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"

	"github.com/patrold/patrold/store/records"
)

// SeedCopy writes a consistent copy of this database to path (which must
// not exist) for another instance to start from (cluster mode, `patrold
// db seed`). It runs VACUUM INTO inside one read transaction. In the copy
// it then empties the outbox (this instance's events are its own to
// publish) and resets the capture state to a standby's. The applied
// sequence, epoch and change number are kept, so the copy resumes the
// state stream where this database stands. It returns the copy's replica
// status.
func (s *Store) SeedCopy(ctx context.Context, path string) (records.ReplicaStatus, error) {
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		return records.ReplicaStatus{}, fmt.Errorf("seed copy: %s already exists", path)
	}
	if _, err := s.db.ExecContext(ctx, "VACUUM INTO ?", path); err != nil {
		return records.ReplicaStatus{}, fmt.Errorf("seed copy: %w", err)
	}
	cp, err := Open(ctx, path)
	if err != nil {
		os.Remove(path)
		return records.ReplicaStatus{}, fmt.Errorf("seed copy: %w", err)
	}
	defer cp.Close()
	err = cp.withTx(ctx, func(tx *sql.Tx) error {
		for _, q := range []string{
			"DELETE FROM outbox",
			"DELETE FROM outbox_sent",
			"UPDATE replica_state SET capture = 0, applying = 0, subject = '', origin = '', epoch = 0, changes = applied_n, own_since = applied_epoch + 1 WHERE id = 1",
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = cp.checkpoint(ctx)
	}
	if err != nil {
		os.Remove(path)
		return records.ReplicaStatus{}, fmt.Errorf("seed copy: reset: %w", err)
	}
	return cp.ReplicaStatus(ctx)
}

// checkpoint folds the write-ahead log into the file, so the file alone is
// the whole database.
func (s *Store) checkpoint(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	return err
}

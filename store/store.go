// Package store owns the SQLite database: it opens it, applies the
// embedded migrations, and keeps every table behind typed methods (findings,
// runs and outbox rows written in one transaction; silences, suppressions,
// investigations, remediation sessions, approvals, audit events). It is the
// only package that imports database/sql.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/patrold/patrold/migrations"
)

// MaxOpenConns bounds the store's SQLite connections (and the run
// commit's one more).
const MaxOpenConns = 16

// CommitCacheKiB is the page cache of the run commit's connection. 4 MiB
// keeps a 100k-resource daemon's peak and settled memory about 20 MB
// lower than 32 MiB did; a steady 10k commit takes ~0.2 s more
// (docs/PERFORMANCE.md).
const CommitCacheKiB = 4096

// Store is the SQLite store of findings, runs and outbox rows. Writes go
// through immediate transactions, so a run and operator actions serialise
// on the database and no update is lost.
type Store struct {
	db *sql.DB
	// commitDB is the run commit's own connection, with a page cache
	// of CommitCacheKiB. A larger run's writes spill to the write-ahead
	// log before the commit. The pool's connections keep SQLite's small
	// default, so API readers do not each grow one.
	commitDB *sql.DB
	path     string
	info     os.FileInfo // the file opened, for FileCheck
	// recent are the outbox rows Enqueue committed, for the relay
	// (outbox_cache.go).
	recent outboxCache
	// active are the active findings as the last run commit left them
	// (active_cache.go).
	active activeCache
	ck     *checkpointer // checkpoint.go
	// committed is called after every commit that may have written
	// outbox rows (OnCommit).
	committed atomic.Pointer[func()]
}

// OnCommit sets fn to be called after every commit of a write that may
// queue outbox rows: run commits, operator actions, silences, sessions,
// approvals, audit. The relay's Kick fits: fn must not block. Marking
// rows sent does not call it.
func (s *Store) OnCommit(fn func()) { s.committed.Store(&fn) }

// notifyCommit calls the OnCommit hook, if any.
func (s *Store) notifyCommit() {
	if fn := s.committed.Load(); fn != nil && *fn != nil {
		(*fn)()
	}
}

// exec runs one write outside a transaction and reports its commit.
// Under a CommitMark it runs in a transaction of its own, so the mark
// sees the outbox rows its triggers wrote.
func (s *Store) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if markOf(ctx) != nil {
		var res sql.Result
		err := s.withTx(ctx, func(tx *sql.Tx) error {
			var err error
			res, err = tx.ExecContext(ctx, q, args...)
			return err
		})
		return res, err
	}
	res, err := s.db.ExecContext(ctx, q, args...)
	if err == nil {
		s.notifyCommit()
	}
	return res, err
}

// Open opens (creating if needed) the database at path and applies every
// pending migration.
func Open(ctx context.Context, path string) (*Store, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
	}
	q := url.Values{}
	if path != "" && path != ":memory:" {
		// The file is created here, once. The pools open it with mode=rw:
		// a connection opened after the file was deleted fails instead of
		// creating a new, empty database under the running process.
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
			if err != nil && !errors.Is(err, os.ErrExist) {
				return nil, fmt.Errorf("open store: %w", err)
			}
			if f != nil {
				f.Close()
			}
		}
		q.Set("mode", "rw")
	}
	q.Set("_journal_mode", "WAL")
	q.Set("_foreign_keys", "on")
	q.Set("_busy_timeout", "10000")
	q.Set("_txlock", "immediate")
	q.Set("_synchronous", "NORMAL")
	var opened os.FileInfo
	if path != "" && path != ":memory:" {
		var err error
		if opened, err = os.Stat(path); err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
	}
	db := sql.OpenDB(newFileConnector("file:"+path+"?"+q.Encode(), path, opened))
	// A bounded pool of connections kept open: each SQLite connection has
	// its own page cache, and opening one re-runs the pragmas, so under
	// many API readers an unbounded pool that closes idle connections costs
	// both memory and latency. Requests beyond the pool wait their turn.
	db.SetMaxOpenConns(MaxOpenConns)
	db.SetMaxIdleConns(MaxOpenConns)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := Migrate(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	q.Set("_cache_size", fmt.Sprint(-CommitCacheKiB))
	commitDB := sql.OpenDB(newFileConnector("file:"+path+"?"+q.Encode(), path, opened))
	commitDB.SetMaxOpenConns(1)
	commitDB.SetMaxIdleConns(1)
	return &Store{db: db, commitDB: commitDB, path: path, info: opened, ck: startCheckpointer(db)}, nil
}

// ErrSchemaTooNew: the database was migrated by a newer patrold.
var ErrSchemaTooNew = errors.New("database schema is newer than this patrold")

// Migrate applies the embedded migrations to db. A database whose schema
// version is past the newest embedded migration (written by a newer
// patrold) is refused with ErrSchemaTooNew and left untouched.
func Migrate(ctx context.Context, db *sql.DB) error {
	p, err := goose.NewProvider(goose.DialectSQLite3, db, migrations.FS)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	current, target, err := p.GetVersions(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if current > target {
		return fmt.Errorf("migrate: schema version %d, this patrold knows up to %d: %w (run the newer patrold, or restore a backup)", current, target, ErrSchemaTooNew)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// SchemaVersion is the database's applied migration version.
func (s *Store) SchemaVersion(ctx context.Context) (int64, error) {
	p, err := goose.NewProvider(goose.DialectSQLite3, s.db, migrations.FS)
	if err != nil {
		return 0, err
	}
	return p.GetDBVersion(ctx)
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Close closes the database.
func (s *Store) Close() error {
	if s.ck != nil {
		s.ck.close()
	}
	return errors.Join(s.commitDB.Close(), s.db.Close())
}

const timeLayout = time.RFC3339Nano

func fmtTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func fmtTimePtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return fmtTime(*t)
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(timeLayout, s)
	return t
}

func parseTimePtr(s sql.NullString) *time.Time {
	if !s.Valid || s.String == "" {
		return nil
	}
	t := parseTime(s.String)
	return &t
}

// withTx runs fn in one transaction and reports its commit. Under a
// CommitMark it raises the mark to the last outbox row fn wrote. The
// transaction holds the write lock from its start (_txlock=immediate),
// so the rows between the two reads are fn's.
func (s *Store) withTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	mark := markOf(ctx)
	var wrote int64
	err := withTxOn(ctx, s.db, func(tx *sql.Tx) error {
		if mark == nil {
			return fn(tx)
		}
		before, err := lastOutboxSeq(ctx, tx)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			return err
		}
		after, err := lastOutboxSeq(ctx, tx)
		if after > before {
			wrote = after
		}
		return err
	})
	if err == nil {
		if wrote > 0 {
			mark.raise(wrote)
		}
		s.notifyCommit()
	}
	return err
}

func withTxOn(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

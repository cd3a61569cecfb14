package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ErrCorrupt: SQLite's integrity check reported problems.
var ErrCorrupt = errors.New("database integrity check failed")

// Check runs PRAGMA quick_check (full: integrity_check, which also
// verifies indexes against tables) and returns nil when SQLite answers
// "ok", else ErrCorrupt with the first problems it listed.
func (s *Store) Check(ctx context.Context, full bool) error {
	pragma := "PRAGMA quick_check"
	if full {
		pragma = "PRAGMA integrity_check"
	}
	rows, err := s.db.QueryContext(ctx, pragma)
	if err != nil {
		return s.corrupt(pragma, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return err
		}
		if line != "ok" && len(problems) < 10 {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return s.corrupt(pragma, err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: %s: %w", s.path, strings.Join(problems, "; "), ErrCorrupt)
	}
	return nil
}

// IsCorrupt says whether err is SQLite finding the file malformed
// (SQLITE_CORRUPT, SQLITE_NOTADB) or a failed integrity check. It reads
// the error's code, never its words: a message can say anything.
func IsCorrupt(err error) bool {
	return sqliteCorrupt(err) || errors.Is(err, ErrCorrupt)
}

// corrupt wraps an error SQLite raised while checking: a malformed file is
// ErrCorrupt, anything else stays what it is.
func (s *Store) corrupt(pragma string, err error) error {
	if IsCorrupt(err) {
		return fmt.Errorf("%s: %s: %v: %w", s.path, pragma, err, ErrCorrupt)
	}
	return fmt.Errorf("%s: %w", pragma, err)
}

// Vacuum rewrites the database file, returning freed pages to the file
// system, and truncates the write-ahead log.
func (s *Store) Vacuum(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, "VACUUM"); err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return fmt.Errorf("vacuum: checkpoint: %w", err)
	}
	return nil
}

// ErrFileMissing: the database file is no longer where it was opened.
var ErrFileMissing = errors.New("database file missing")

// FileMissingError: a connection would have opened a file other than
// the one the store opened (it was replaced or deleted). It is
// ErrFileMissing, and Unavailable: the API answers 503, not 500.
type FileMissingError struct {
	Path  string
	Cause error // what opening it said (nil: it opened another file)
}

func (e *FileMissingError) Error() string {
	msg := e.Path + " was replaced or deleted since it was opened: " + ErrFileMissing.Error()
	if e.Cause != nil {
		msg += " (" + e.Cause.Error() + ")"
	}
	return msg
}

// Is makes it ErrFileMissing.
func (e *FileMissingError) Is(target error) bool { return target == ErrFileMissing }

// Unavailable says the store cannot serve this now (not a bug).
func (e *FileMissingError) Unavailable() bool { return true }

// FileCheck reports whether the database file opened is still on disk
// at its path (the same file, not a new empty one created in its place).
// A deleted file keeps working through the open handle, so pings alone
// do not notice; readiness must.
func (s *Store) FileCheck() error {
	if s.path == "" || s.path == ":memory:" {
		return nil
	}
	fi, err := os.Stat(s.path)
	if err != nil {
		return fmt.Errorf("%s: %w", s.path, ErrFileMissing)
	}
	if s.info != nil && !os.SameFile(s.info, fi) {
		return fmt.Errorf("%s was replaced by another file: %w", s.path, ErrFileMissing)
	}
	return nil
}

// Size returns the database file's size and the write-ahead log's.
func (s *Store) Size() (db, wal int64) {
	if fi, err := os.Stat(s.path); err == nil {
		db = fi.Size()
	}
	if fi, err := os.Stat(s.path + "-wal"); err == nil {
		wal = fi.Size()
	}
	return db, wal
}

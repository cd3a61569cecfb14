package store_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store"
)

// TestDeletedFileIsNotCreatedAgain: a connection the pool opens after the
// database file was deleted fails; it does not create a new, empty file
// that the next start would take for the database.
func TestDeletedFileIsNotCreatedAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "patrold.db")
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		os.Remove(f)
	}
	// Drop the idle connections: the next query opens a new one.
	st.DB().SetMaxIdleConns(0)
	err = st.DB().PingContext(context.Background())
	if err == nil || !strings.Contains(err.Error(), "unable to open database file") {
		t.Fatalf("ping after the delete: %v, want unable to open database file", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s was created again: %v", path, err)
	}
}

// TestReplacedFileIsNeverOpened: the database file is replaced under an
// open store (the flake of the daemon's lost-database test: a read got
// 500 when the pool opened a new connection). A connection the pool
// opens now refuses the other file with a FileMissingError (the API's
// 503), and the connections already open go on reading the file that was
// opened, whole.
func TestReplacedFileIsNeverOpened(t *testing.T) {
	for _, how := range []string{"replaced", "deleted"} {
		t.Run(how, func(t *testing.T) { replacedFileNeverOpened(t, how) })
	}
}

func replacedFileNeverOpened(t *testing.T, how string) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "p.db")
	st := openAt(t, path)
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	commit(t, st, at, true, fobs("vm/1", "high_cpu", "warning", "cpu_percent_avg 91.5 over 900 s"))
	want, err := st.List(ctx, findings.ListFilter{})
	if err != nil || len(want) != 1 {
		t.Fatalf("before: %+v %v", want, err)
	}
	// Every connection but one is busy: the next read opens the last.
	var held []*sql.Conn
	for range store.MaxOpenConns - 1 {
		c, err := st.DB().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		os.Remove(f)
	}
	if how == "replaced" {
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, err = st.List(ctx, findings.ListFilter{})
	var missing *store.FileMissingError
	if !errors.As(err, &missing) || !errors.Is(err, store.ErrFileMissing) || !missing.Unavailable() ||
		!strings.Contains(err.Error(), path+" was replaced or deleted since it was opened: database file missing") {
		t.Fatalf("a read through a new connection: %v, want a FileMissingError", err)
	}
	for _, c := range held {
		c.Close()
	}
	got, err := st.List(ctx, findings.ListFilter{})
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("a read through an open connection:\n got %+v %v\nwant %+v", got, err, want)
	}
}

package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

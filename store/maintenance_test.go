package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/patrold/patrold/store"
)

// TestCheckFindsCorruption: quick_check answers ok on a sound database and
// ErrCorrupt once an index page is overwritten.
func TestCheckFindsCorruption(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "patrold.db")
	st, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	// Enough rows that the events index spans pages of its own.
	tx, _ := st.DB().Begin()
	for i := 0; i < 3000; i++ {
		if _, err := tx.Exec("INSERT INTO audit_events (at, method, path, route, status) VALUES (?, 'GET', ?, 'r', 200)",
			fmt.Sprintf("2026-11-29T10:%02d:%02dZ", i/60%60, i%60), strings.Repeat("p", 50)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := st.Check(ctx, false); err != nil {
		t.Fatalf("sound database: %v", err)
	}
	if err := st.Check(ctx, true); err != nil {
		t.Fatalf("sound database, full check: %v", err)
	}
	var root int
	if err := st.DB().QueryRow("SELECT rootpage FROM sqlite_master WHERE name = 'audit_events_at'").Scan(&root); err != nil {
		t.Fatal(err)
	}
	var pageSize int
	st.DB().QueryRow("PRAGMA page_size").Scan(&pageSize)
	st.DB().Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	st.Close()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Keep the page header, scramble the cells of the index's root page.
	junk := make([]byte, pageSize-100)
	for i := range junk {
		junk[i] = byte(i * 7)
	}
	f.WriteAt(junk, int64(root-1)*int64(pageSize)+100)
	f.Close()
	st, err = store.Open(ctx, path)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer st.Close()
	err = st.Check(ctx, false)
	if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("corrupted database: %v", err)
	}
}

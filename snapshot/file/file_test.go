package file_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/patrold/patrold/snapshot/file"
)

func TestSizeLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "snap.json")
	doc := `{"version":1,"resources":[{"id":"node/a","kind":"node","status":"online"}]}`
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	small, err := file.New(file.Options{Path: p, MaxBytes: 20})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = small.Collect(context.Background())
	if !errors.Is(err, file.ErrTooLarge) || !strings.Contains(err.Error(), "over source.file.max_bytes (20)") {
		t.Fatalf("over the limit: %v", err)
	}
	exact, _ := file.New(file.Options{Path: p, MaxBytes: int64(len(doc))})
	snap, _, err := exact.Collect(context.Background())
	if err != nil || len(snap.Resources) != 1 {
		t.Fatalf("at the limit: %v", err)
	}
	if _, _, err := file.Load(p); err != nil {
		t.Fatalf("default limit: %v", err)
	}
}

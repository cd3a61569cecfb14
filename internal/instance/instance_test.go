package instance_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/patrold/patrold/internal/instance"
)

func TestGeneratedNameIsKept(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "var")
	first, err := instance.Name(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*-[0-9a-f]{8}$`).MatchString(first) {
		t.Fatalf("generated name %q", first)
	}
	again, err := instance.Name(dir, "")
	if err != nil || again != first {
		t.Fatalf("second start: %q %v, want %q", again, err, first)
	}
	if other, err := instance.Name(t.TempDir(), ""); err != nil || other == first {
		t.Fatalf("another data_dir: %q %v", other, err)
	}
}

func TestConfiguredNameWins(t *testing.T) {
	dir := t.TempDir()
	if got, err := instance.Name(dir, "pa-1"); err != nil || got != "pa-1" {
		t.Fatalf("configured: %q %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, instance.FileName)); !os.IsNotExist(err) {
		t.Fatalf("a configured name wrote %s: %v", instance.FileName, err)
	}
}

func TestBadNames(t *testing.T) {
	for _, bad := range []string{"has space", "-lead", strings.Repeat("a", 64), "ü"} {
		_, err := instance.Name(t.TempDir(), bad)
		if err == nil || !strings.HasPrefix(err.Error(), "cluster.instance: ") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, instance.FileName), []byte("not a name!\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := instance.Name(dir, ""); err == nil || !strings.Contains(err.Error(), "is not an instance name") {
		t.Fatalf("corrupt file: %v", err)
	}
}

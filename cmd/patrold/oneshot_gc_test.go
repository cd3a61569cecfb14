package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// TestOneShotLimit: 1.5x the file, never below 256 MiB.
func TestOneShotLimit(t *testing.T) {
	got := []int64{oneShotLimit(0), oneShotLimit(36_700_000), oneShotLimit(369_065_046)}
	want := []int64{256 << 20, 256 << 20, 553_597_569}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("limits %v, want %v", got, want)
			break
		}
	}
}

// TestOneShotGCLeavesTheOperatorsSettings: a one-shot run of a file sets
// the collector (GOGC 400, the file's limit); GOGC or GOMEMLIMIT in the
// environment, no file, or a path that is no regular file leave it as
// it was.
func TestOneShotGCLeavesTheOperatorsSettings(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "snapshot.json")
	if err := os.WriteFile(file, make([]byte, 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	type gc struct{ percent, limit int64 }
	read := func() gc {
		p := int64(debug.SetGCPercent(100))
		debug.SetGCPercent(int(p))
		return gc{p, debug.SetMemoryLimit(-1)}
	}
	before := read()
	t.Cleanup(func() { debug.SetGCPercent(int(before.percent)); debug.SetMemoryLimit(before.limit) })
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for name, c := range map[string]struct {
		path string
		env  map[string]string
	}{
		"GOGC set":       {file, map[string]string{"GOGC": "100"}},
		"GOMEMLIMIT set": {file, map[string]string{"GOMEMLIMIT": "1GiB"}},
		"no file":        {"", nil},
		"a directory":    {dir, nil},
		"missing":        {filepath.Join(dir, "none.json"), nil},
	} {
		oneShotGC(c.path, env(c.env))
		if got := read(); got != before {
			t.Errorf("%s: collector %+v, want it left at %+v", name, got, before)
		}
	}
	oneShotGC(file, env(nil))
	if got, want := read(), (gc{oneShotGCPercent, 256 << 20}); got != want {
		t.Errorf("a file's one-shot run: collector %+v, want %+v", got, want)
	}
}

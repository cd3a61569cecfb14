//go:build linux && cgo

package store_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/patrold/patrold/store"
)

// cHeapChildEnv makes TestReleaseMemoryReturnsFreedCMemory's child measure instead of
// starting one: the thresholds are the process's, so a fresh process
// shows them as glibc sets them.
const cHeapChildEnv = "STORE_CHEAP_CHILD"

// cHeapReport is what the child measured, glibc's own thresholds then
// fixed ones.
type cHeapReport struct {
	Glibc, Fixed struct {
		Mapped bool
		Kept   int64
	}
}

// TestReleaseMemoryReturnsFreedCMemory: after a large block was freed
// (a commit frees one of megabytes), glibc on its own keeps a freed 8 MB
// of small blocks in its arena and serves a 1 MB block from it (the
// attack, measured first); after ReleaseMemory the 1 MB block is mapped
// alone and the arena gives the 8 MB back.
func TestReleaseMemoryReturnsFreedCMemory(t *testing.T) {
	if os.Getenv(cHeapChildEnv) != "" {
		var rep cHeapReport
		st := openStore(t)
		store.RaiseCHeapThresholds()
		p := store.ProbeCHeap()
		rep.Glibc.Mapped, rep.Glibc.Kept = p.Mapped, p.Kept
		if err := st.ReleaseMemory(context.Background()); err != nil {
			t.Fatal(err)
		}
		p = store.ProbeCHeap()
		rep.Fixed.Mapped, rep.Fixed.Kept = p.Mapped, p.Kept
		if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
			t.Fatal(err)
		}
		return
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^TestReleaseMemoryReturnsFreedCMemory$")
	cmd.Env = append(os.Environ(), cHeapChildEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	var rep cHeapReport
	// The report is the child's first line; the test framework's PASS follows.
	first, _, _ := strings.Cut(string(out), "\n")
	if err := json.Unmarshal([]byte(first), &rep); err != nil {
		t.Fatalf("child's report %q: %v", out, err)
	}
	t.Logf("%+v", rep)
	if rep.Glibc.Mapped || rep.Glibc.Kept < 4<<20 {
		t.Errorf("glibc's own thresholds: mapped %v, kept %d bytes; want a 1 MB block from the arena and at least 4 MiB kept (else this test measures nothing)", rep.Glibc.Mapped, rep.Glibc.Kept)
	}
	if !rep.Fixed.Mapped || rep.Fixed.Kept > 1<<20 {
		t.Errorf("after ReleaseMemory: mapped %v, kept %d bytes; want the 1 MB block mapped alone and at most 1 MiB kept", rep.Fixed.Mapped, rep.Fixed.Kept)
	}
}

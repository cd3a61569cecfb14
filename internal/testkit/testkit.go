// Package testkit is what patrold's tests share across packages: a log
// buffer safe for concurrent writers, a deployment key file, and waiting on a condition instead
// of sleeping. Only tests import it.
package testkit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// KeyFile writes the test deployment key file (one key, mode 0600) into
// a temporary directory and returns its path: the cluster.secret_file of
// a test's instances. Every call writes the same key, so instances
// configured apart still agree.
func KeyFile(t testing.TB) string {
	t.Helper()
	s := sha256.Sum256([]byte("patrold test deployment key"))
	path := filepath.Join(t.TempDir(), "bus.key")
	if err := os.WriteFile(path, []byte("k1 "+hex.EncodeToString(s[:])+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// LogBuffer collects what goroutines or a child process write (a log, a
// process's output) for the test to read; safe for concurrent use.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// pollEvery is how often a condition is checked again.
const pollEvery = 20 * time.Millisecond

// Eventually checks cond until it holds, and fails t when it still does not
// after within.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting until %s", within, what)
		}
		time.Sleep(pollEvery)
	}
}

// EventuallyState is Eventually for a condition that also describes what
// it saw; the last description is in the failure.
func EventuallyState(t testing.TB, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last state:\n%s", within, what, state)
		}
		time.Sleep(pollEvery)
	}
}

package exec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/snapshot"
)

// script writes an executable shell script into a temp dir and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "collect.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func newSource(t *testing.T, opts Options) *Source {
	t.Helper()
	if opts.Env == nil {
		opts.Env = []string{"PATH"}
	}
	s, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

const validDoc = `{"version": 1, "resources": [
 {"id": "node/pve1", "kind": "node", "status": "online", "metrics": {"cpu_percent": 91}},
 {"id": "vm/101", "kind": "vm", "status": "running", "addresses": ["127.0.0.1:22"]},
 {"id": "thing/1", "kind": "toaster"}]}`

func TestCollectValidDocument(t *testing.T) {
	path := script(t, "cat <<'DOC'\n"+validDoc+"\nDOC")
	s := newSource(t, Options{Command: []string{path}})
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	snap, problems, err := s.CollectAt(context.Background(), now)
	if err != nil {
		t.Fatalf("CollectAt: %v", err)
	}
	if !snap.TakenAt.Equal(now) {
		t.Errorf("taken_at = %v, want the collection time %v", snap.TakenAt, now)
	}
	if snap.Source != DefaultSourceName {
		t.Errorf("source = %q, want %q", snap.Source, DefaultSourceName)
	}
	if len(snap.Resources) != 2 || snap.Resources[0].ID != "node/pve1" || snap.Resources[0].Metrics.Map()["cpu_percent"] != 91 {
		t.Fatalf("resources = %+v", snap.Resources)
	}
	if len(problems) != 1 || problems[0].ID != "thing/1" || problems[0].Field != "kind" {
		t.Fatalf("problems = %+v, want the toaster dropped on kind", problems)
	}
}

func TestCollectKeepsDocumentTakenAt(t *testing.T) {
	path := script(t, `echo '{"version":1,"taken_at":"2026-01-02T03:04:05Z","source":"mine","resources":[]}'`)
	snap, _, err := newSource(t, Options{Command: []string{path}}).CollectAt(context.Background(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC); !snap.TakenAt.Equal(want) || snap.Source != "mine" {
		t.Fatalf("taken_at %v source %q, want the document's own", snap.TakenAt, snap.Source)
	}
}

func TestCollectPassesArguments(t *testing.T) {
	path := script(t, `echo "{\"version\":1,\"resources\":[{\"id\":\"node/$1\",\"kind\":\"node\"}]}"`)
	snap, _, err := newSource(t, Options{Command: []string{path, "from-argv"}}).Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if snap.Resources[0].ID != "node/from-argv" {
		t.Fatalf("id = %q, want argv passed through", snap.Resources[0].ID)
	}
}

func TestCollectInvalidDocument(t *testing.T) {
	for name, tc := range map[string]struct{ out, want string }{
		"not json":      {`echo '{"version": 1, "resources": [}'`, "not valid JSON"},
		"wrong version": {`echo '{"version": 2, "resources": []}'`, "version: must be 1"},
		"no resources":  {`echo '{"version": 1}'`, "resources: required"},
		"empty output":  {`true`, "empty output"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := newSource(t, Options{Command: []string{script(t, tc.out)}}).Collect(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestCollectNonZeroExitCarriesStderr(t *testing.T) {
	path := script(t, "echo 'api.example: connection refused' >&2\necho '{\"version\":1,\"resources\":[]}'\nexit 3")
	_, _, err := newSource(t, Options{Command: []string{path}}).Collect(context.Background())
	if !errors.Is(err, ErrExit) {
		t.Fatalf("err = %v, want ErrExit", err)
	}
	for _, want := range []string{"exit status 3", "api.example: connection refused", path} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err %q lacks %q", err, want)
		}
	}
}

func TestCollectStderrIsBounded(t *testing.T) {
	path := script(t, "head -c 100000 /dev/zero | tr '\\0' x >&2\nexit 1")
	_, _, err := newSource(t, Options{Command: []string{path}}).Collect(context.Background())
	if !errors.Is(err, ErrExit) || len(err.Error()) > stderrLimit+500 || !strings.Contains(err.Error(), "[truncated]") {
		t.Fatalf("err (%d bytes) not bounded and marked truncated: %.200s", len(err.Error()), err)
	}
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

func TestCollectTimeoutKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	path := script(t, "sleep 60 &\necho $! > \"$1\"\necho partial\nsleep 60")
	s := newSource(t, Options{Command: []string{path, pidFile}, Timeout: 300 * time.Millisecond})
	start := time.Now()
	_, _, err := s.Collect(context.Background())
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "300ms") {
		t.Fatalf("err = %v, want ErrTimeout naming the timeout", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("collect took %s after a 300ms timeout", d)
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	t.Cleanup(func() {
		if alive(pid) {
			_ = killGroup(pid)
		}
	})
	testkit.Eventually(t, 2*time.Second, "the background child "+strconv.Itoa(pid)+" ends with the timeout", func() bool { return !alive(pid) })
}

func TestCollectDescendantHoldingOutput(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	// The child inherits stdout and outlives the collector.
	path := script(t, "sleep 60 &\necho $! > \"$1\"\necho '{\"version\":1,\"resources\":[]}'")
	_, _, err := newSource(t, Options{Command: []string{path, pidFile}}).Collect(context.Background())
	if err == nil || !strings.Contains(err.Error(), "kept its output open") {
		t.Fatalf("err = %v, want the held-open output reported", err)
	}
	raw, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	time.Sleep(100 * time.Millisecond)
	if pid == 0 || alive(pid) {
		t.Fatalf("descendant %d still alive", pid)
	}
}

func TestCollectOutputTooLarge(t *testing.T) {
	path := script(t, "exec yes '{\"version\":1}'")
	start := time.Now()
	_, _, err := newSource(t, Options{Command: []string{path}, MaxOutputBytes: 1000}).Collect(context.Background())
	if !errors.Is(err, ErrOutputTooLarge) || !strings.Contains(err.Error(), "max_output_bytes") {
		t.Fatalf("err = %v, want ErrOutputTooLarge", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("an endless writer took %s to stop", d)
	}
}

func TestCollectCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	path := script(t, "sleep 60")
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	_, _, err := newSource(t, Options{Command: []string{path}}).Collect(ctx)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want context.Canceled and not a timeout", err)
	}
}

func TestEnvAllowList(t *testing.T) {
	t.Setenv("PATROLD_TEST_ALLOWED", "visible")
	t.Setenv("PATROLD_TEST_SECRET", "hidden-value")
	envFile := filepath.Join(t.TempDir(), "env.txt")
	path := script(t, "/usr/bin/env > \"$1\"\necho '{\"version\":1,\"resources\":[]}'")
	s := newSource(t, Options{Command: []string{path, envFile}, Env: []string{"PATROLD_TEST_ALLOWED", "PATROLD_TEST_UNSET"}})
	if _, _, err := s.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	env := string(raw)
	if !strings.Contains(env, "PATROLD_TEST_ALLOWED=visible") {
		t.Errorf("allowed variable missing from child env:\n%s", env)
	}
	for _, banned := range []string{"PATROLD_TEST_SECRET", "hidden-value", "PATROLD_TEST_UNSET", "HOME="} {
		if strings.Contains(env, banned) {
			t.Errorf("child env contains %q, which is not allow-listed:\n%s", banned, env)
		}
	}
}

// With no allow-listed variable set the child gets an empty environment,
// not the daemon's (a nil exec.Cmd.Env would inherit everything).
func TestEnvNothingSet(t *testing.T) {
	t.Setenv("PATROLD_TEST_SECRET", "hidden-value")
	envFile := filepath.Join(t.TempDir(), "env.txt")
	path := script(t, "/usr/bin/env > \"$1\"\necho '{\"version\":1,\"resources\":[]}'")
	s := newSource(t, Options{Command: []string{path, envFile}, Env: []string{"PATROLD_TEST_UNSET"}})
	if _, _, err := s.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	// /bin/sh may add PWD, SHLVL or _ itself; nothing from the daemon may appear.
	if strings.Contains(string(raw), "hidden-value") || strings.Contains(string(raw), "PATH=") {
		t.Fatalf("child inherited the daemon environment:\n%s", raw)
	}
}

func TestOptionsValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		opts Options
		want string
	}{
		"no command":       {Options{}, "source.exec.command: required"},
		"empty program":    {Options{Command: []string{" "}}, "source.exec.command[0]: empty"},
		"negative timeout": {Options{Command: []string{"x"}, Timeout: -time.Second}, "source.exec.timeout: must not be negative"},
		"negative max":     {Options{Command: []string{"x"}, MaxOutputBytes: -1}, "source.exec.max_output_bytes"},
		"bad env name":     {Options{Command: []string{"x"}, Env: []string{"OK", "A=B"}}, "source.exec.env[1]"},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.opts.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
			if _, err := New(tc.opts); err == nil {
				t.Fatal("New accepted invalid options")
			}
		})
	}
	if err := (Options{Command: []string{"/bin/true"}}).Validate(); err != nil {
		t.Fatalf("valid options rejected: %v", err)
	}
}

func TestNewMissingProgram(t *testing.T) {
	_, err := New(Options{Command: []string{filepath.Join(t.TempDir(), "nope")}})
	if err == nil || !strings.HasPrefix(err.Error(), "source.exec.command[0]: ") {
		t.Fatalf("err = %v, want it to name source.exec.command[0]", err)
	}
}

func TestNewDefaults(t *testing.T) {
	s := newSource(t, Options{Command: []string{"/bin/true"}})
	if s.opts.Timeout != DefaultTimeout || s.opts.MaxOutputBytes != DefaultMaxOutputBytes {
		t.Fatalf("defaults not applied: %+v", s.opts)
	}
}

var _ snapshot.Source = (*Source)(nil)

// TestCollectKeptHandsResourcesOver: the collector's output is decoded
// with the resources handed over as they are kept, and the snapshot holds
// exactly them.
func TestCollectKeptHandsResourcesOver(t *testing.T) {
	path := script(t, "cat <<'DOC'\n"+validDoc+"\nDOC")
	var batches [][]snapshot.Resource
	var at []time.Time
	var decoding uint64
	snap, problems, err := newSource(t, Options{Command: []string{path}}).CollectKept(context.Background(), func(h snapshot.Handed) {
		batches, at, decoding = append(batches, h.Resources), append(at, h.TakenAt), h.Decoding
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(batches) != 1 || len(batches[0]) != 2 || decoding == 0 || snap.HeldFrom() != decoding || len(problems) != 1 {
		t.Fatalf("%d batches (held from %d, theirs %d), %d problems: want one batch of the two kept resources, held, and the toaster", len(batches), snap.HeldFrom(), decoding, len(problems))
	}
	if snap.TakenAt.IsZero() || snap.Source != DefaultSourceName {
		t.Errorf("taken_at %v source %q: want the collection time and %q", snap.TakenAt, snap.Source, DefaultSourceName)
	}
	// The document has no taken_at: its batches were taken at the time the
	// snapshot is stamped with, so what was made of them holds.
	if !at[0].Equal(snap.TakenAt) {
		t.Errorf("the batch was taken at %v, the snapshot at %v", at[0], snap.TakenAt)
	}
}

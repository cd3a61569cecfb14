package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/dirlock"
	"github.com/patrold/patrold/internal/testkit"
)

// execEnv makes the test binary run patrold's main instead of the tests,
// so a test can start, signal and kill -9 a real patrold process.
const execEnv = "RUN_TEST_BINARY_AS_PATROLD"

func TestMain(m *testing.M) {
	if os.Getenv(execEnv) == "1" {
		os.Exit(run())
	}
	os.Exit(m.Run())
}

// proc is a patrold process.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr *testkit.LogBuffer
	done   chan struct{}
	err    error
}

// startPatrold starts `patrold --config cfg argv...` as a process.
func startPatrold(t *testing.T, cfg string, argv ...string) *proc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, stderr: &testkit.LogBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(exe, append([]string{"--config", cfg}, argv...)...)
	p.cmd.Env = append(os.Environ(), execEnv+"=1")
	p.cmd.Stdout, p.cmd.Stderr = p.stderr, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			if t.Failed() && os.Getenv(chaosEnv) != "" {
				// The chaos test's failures are rare: the goroutines
				// say where a process waited.
				_ = p.cmd.Process.Signal(syscall.SIGQUIT)
				select {
				case <-p.done:
				case <-time.After(5 * time.Second):
				}
			}
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("patrold %v output:\n%s", argv, p.stderr.String())
		}
	})
	return p
}

// exit waits for the process to end and returns its exit code.
func (p *proc) exit(within time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(within):
		p.t.Fatalf("patrold still running after %s:\n%s", within, p.stderr.String())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if p.err != nil {
		p.t.Fatal(p.err)
	}
	return 0
}

func (p *proc) signal(sig os.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
}

const testAdminToken = "process-test-admin-token"

// serveConfig writes a configuration for a served daemon on a fresh
// data_dir and returns its path and data_dir. It has the API and embedded
// NATS on free ports, an admin token and no assistant. Extra YAML is
// added, which may set nats, schedule and assistant itself.
func serveConfig(t *testing.T, extra string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "var")
	body := "data_dir: " + data + "\n" +
		"log: {level: info}\n" +
		"http: {listen: '127.0.0.1:0', tokens: [{name: admin, token: " + testAdminToken + ", scope: admin}]}\n" +
		extra
	if !strings.Contains(extra, "assistant:") {
		body += "assistant: {enabled: false}\n"
	}
	if !strings.Contains(extra, "nats:") {
		body += "nats: {embedded: {listen: '127.0.0.1:0'}}\n"
	}
	if !strings.Contains(extra, "schedule:") {
		body += "schedule: {cron: '@every 1h', startup_delay: 1h}\n"
	}
	cfg := filepath.Join(dir, "patrold.yaml")
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, data
}

// apiOf waits for the daemon p to record its bound API address in the
// data_dir lock and returns a client for it. It reads the lock file
// without taking any flock, so it never races the daemon's Acquire.
func apiOf(t *testing.T, p *proc, data string) (*api.Client, *dirlock.Holder) {
	t.Helper()
	var h *dirlock.Holder
	testkit.Eventually(t, 30*time.Second, "the daemon records its API in the data_dir lock", func() bool {
		holder, err := dirlock.ReadHolder(data)
		if err != nil || holder == nil || holder.PID != p.cmd.Process.Pid || strings.HasSuffix(holder.API, ":0") || holder.API == "" {
			return false
		}
		h = holder
		return true
	})
	c, err := api.NewClient("http://"+h.API, testAdminToken, &http.Client{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the API answers", func() bool { return c.Ping(context.Background()) == nil })
	return c, h
}

// runsBy lists the daemon's runs with the given trigger.
func runsBy(t *testing.T, c *api.Client, trigger string) []findings.RunRecord {
	t.Helper()
	all, err := c.RunsLimit(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []findings.RunRecord
	for _, r := range all {
		if r.Trigger == trigger {
			out = append(out, r)
		}
	}
	return out
}

package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/internal/testkit"
)

// logBuffer is an io.Writer safe for the daemon's concurrent logging.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func adminConfig(t *testing.T, dir string) *config.Config {
	t.Helper()
	cfg := testConfig(t, dir, "", "")
	cfg.HTTP.Tokens = []api.TokenConfig{{Name: "ops", Token: "admin-secret-0001", Scope: "admin"}}
	return cfg
}

func startLogged(t *testing.T, cfg *config.Config, accept bool) (*daemon.Daemon, *logBuffer, error) {
	t.Helper()
	logs := &logBuffer{}
	reg := prometheus.NewRegistry()
	d, err := daemon.New(daemon.Options{Config: cfg, Registerer: reg, Gatherer: reg, Stderr: io.MultiWriter(logs, os.Stderr), AcceptNewDatabase: accept})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		return nil, logs, err
	}
	t.Cleanup(func() { d.Stop(context.Background()) })
	return d, logs, nil
}

const silenceJSON = `{"matchers":{"kind":"vm"},"comment":"maintenance","duration":"1h"}`

func TestLostDatabaseRefusesMutations(t *testing.T) {
	for _, how := range []string{"deleted", "replaced"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			useSnapshot(t, dir, "healthy.json")
			d, logs, err := startLogged(t, adminConfig(t, dir), false)
			if err != nil {
				t.Fatal(err)
			}
			base := "http://" + d.HTTPAddr()
			if code, out := call(t, "POST", base+"/api/v1/silences", "admin-secret-0001", silenceJSON); code != 200 {
				t.Fatalf("silence before: %d %v", code, out)
			}
			db := filepath.Join(dir, daemon.DBFile)
			for _, f := range []string{db, db + "-wal", db + "-shm"} {
				os.Remove(f)
			}
			cause := db + ": database file missing"
			if how == "replaced" {
				if err := os.WriteFile(db, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				cause = db + " was replaced by another file: database file missing"
			}
			// The watch notices without a request.
			testkit.Eventually(t, 10*time.Second, "the loss is logged at ERROR", func() bool {
				return strings.Contains(logs.String(), "level=ERROR msg=\"DATABASE FILE DELETED OR REPLACED under the running daemon")
			})
			want := map[string]any{"error": "not_ready", "details": map[string]any{},
				"message": "database file gone, nothing is written: " + cause + " (restore it and restart patrold)"}
			for _, req := range [][2]string{{"POST", "/api/v1/silences"}, {"POST", "/api/v1/runs"}, {"POST", "/-/reload"}} {
				code, out := call(t, req[0], base+req[1], "admin-secret-0001", silenceJSON)
				if code != http.StatusServiceUnavailable || !equalJSON(out, want) {
					t.Fatalf("%s %s after the file was %s: %d %v, want 503 %v", req[0], req[1], how, code, out, want)
				}
			}
			if _, err := d.TriggerRun(context.Background()); err == nil || err.Error() != cause {
				t.Fatalf("scheduled run on a lost database: %v, want %s", err, cause)
			}
			if n := strings.Count(logs.String(), "DATABASE FILE DELETED OR REPLACED"); n != 1 {
				t.Fatalf("the loss is logged %d times, want once", n)
			}
			// Reads answer from the file that was open, or 503 when the pool
			// would have to open a connection (never to the other file).
			if code, out := call(t, "GET", base+"/api/v1/silences", "admin-secret-0001", ""); code != 200 &&
				(code != http.StatusServiceUnavailable || out["error"] != "not_ready") {
				t.Fatalf("a read after the file was %s: %d %v, want 200 or 503 not_ready", how, code, out)
			}
			if how == "deleted" {
				if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("the daemon created %s again: %v", db, err)
				}
			}
		})
	}
}

func equalJSON(got map[string]any, want any) bool {
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(want)
	return string(a) == string(b)
}

// findingEvents waits until d has published everything and returns how
// many finding events the stream holds.
func findingEvents(t *testing.T, d *daemon.Daemon) uint64 {
	t.Helper()
	js, _ := natsAs(t, d, embedded.RoleSubscriber).JetStream()
	var n uint64
	testkit.Eventually(t, 20*time.Second, "the run's events are on the stream", func() bool {
		pending, _ := d.Store().PendingCount(context.Background())
		info, err := js.StreamInfo("PATROL", &nats.StreamInfoRequest{SubjectsFilter: "patrol.findings.>"})
		if err != nil || pending != 0 {
			return false
		}
		n = 0
		for _, c := range info.State.Subjects {
			n += c
		}
		return n > 0
	})
	return n
}

func TestNewDatabaseBesideHistoryRefused(t *testing.T) {
	for _, how := range []string{"deleted", "emptied"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			useSnapshot(t, dir, "faults.json")
			cfg := adminConfig(t, dir)
			d, _, err := startLogged(t, cfg, false)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.TriggerRun(context.Background()); err != nil {
				t.Fatal(err)
			}
			events := findingEvents(t, d)
			if err := d.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			db := filepath.Join(dir, daemon.DBFile)
			for _, f := range []string{db, db + "-wal", db + "-shm"} {
				if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
			}
			if how == "emptied" {
				if err := os.WriteFile(db, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, _, err = startLogged(t, cfg, false)
			want := "database " + db + " is new or holds no run, but stream PATROL already holds " + itoa(events) +
				" finding events from source \"" + contracts.DefaultSource() + "\": starting on it would announce every finding opened a second time. " +
				"Restore the database from a backup, or start with --accept-new-database to begin a new history on purpose: new database beside an existing history"
			if !errors.Is(err, daemon.ErrNewDatabase) || err.Error() != want {
				t.Fatalf("start on a %s database:\n got  %v\n want %s", how, err, want)
			}
			// Refused twice: the refusal left the database no run to pass with.
			if _, _, err := startLogged(t, cfg, false); !errors.Is(err, daemon.ErrNewDatabase) {
				t.Fatalf("second start: %v", err)
			}
			d2, _, err := startLogged(t, cfg, true)
			if err != nil {
				t.Fatalf("start with --accept-new-database: %v", err)
			}
			if got := findingEvents(t, d2); got != events {
				t.Fatalf("the accepted start published %d finding events before any run, want the %d already there", got, events)
			}
		})
	}
}

func itoa(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

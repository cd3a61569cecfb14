package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/bus/embedded/natstest"
	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/patrol"
)

// testConfig is a daemon on loopback with a file source under dir; cron
// "" means hourly, natsURL "" an embedded server on a free port.
func testConfig(t *testing.T, dir, cron, natsURL string) *config.Config {
	t.Helper()
	if cron == "" {
		cron = "@every 1h"
	}
	base := "data_dir: " + dir + "\nlog: {level: warn}\n" +
		"http: {listen: '127.0.0.1:0'}\n" +
		"nats: {url: '" + natsURL + "', embedded: {listen: '127.0.0.1:0'}, lease: {ttl: 1s}}\n" +
		"schedule: {cron: '" + cron + "', startup_delay: 1h}\n" +
		"source: {kind: file, file: {path: " + filepath.Join(dir, "snapshot.json") + "}}\n"
	cfg, err := config.Load([]byte(base), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func useSnapshot(t *testing.T, dir, name string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "snapshot.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func start(t *testing.T, cfg *config.Config) *daemon.Daemon {
	t.Helper()
	return startWith(t, cfg, prometheus.NewRegistry())
}

// startWith is start with the daemon's metrics on reg.
func startWith(t *testing.T, cfg *config.Config, reg *prometheus.Registry) *daemon.Daemon {
	t.Helper()
	d, err := daemon.New(daemon.Options{Config: cfg, Registerer: reg, Gatherer: reg, Stderr: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(context.Background()) })
	return d
}

type collector struct {
	mu     sync.Mutex
	byID   map[string]int
	events []string // "type subject"
}

// natsAs connects to d's embedded server as role with its generated
// credentials; the connection closes when the test ends.
func natsAs(t *testing.T, d *daemon.Daemon, role embedded.Role) *nats.Conn {
	t.Helper()
	return natstest.ConnectRole(t, d.NATSURL(), d.Config().DataDir, role)
}

func subscribe(t *testing.T, d *daemon.Daemon) *collector {
	t.Helper()
	nc := natsAs(t, d, embedded.RoleDaemon)
	c := &collector{byID: map[string]int{}}
	_, err := nc.Subscribe("patrol.>", func(m *nats.Msg) {
		var ev struct {
			ID      string `json:"id"`
			Type    string `json:"type"`
			Subject string `json:"subject"`
		}
		if json.Unmarshal(m.Data, &ev) != nil {
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.byID[ev.ID]++
		c.events = append(c.events, ev.Type+" "+m.Subject)
	})
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	return c
}

func (c *collector) waitCount(t *testing.T, n int) []string {
	t.Helper()
	testkit.EventuallyState(t, 10*time.Second, fmt.Sprintf("%d events", n), func() (bool, string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.events) >= n, fmt.Sprintf("%d events: %v", len(c.events), c.events)
	})
	c.mu.Lock()
	out := append([]string(nil), c.events...)
	c.mu.Unlock()
	time.Sleep(200 * time.Millisecond) // and nothing more arrives
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.events) != n {
		t.Fatalf("got %d events, want %d: %v", len(c.events), n, c.events)
	}
	for id, k := range c.byID {
		if k != 1 {
			t.Fatalf("event %s delivered %d times", id, k)
		}
	}
	return out
}

func count(events []string, prefix string) int {
	n := 0
	for _, e := range events {
		if len(e) >= len(prefix) && e[:len(prefix)] == prefix {
			n++
		}
	}
	return n
}

// TestPublishedEventsFollowThePolicy: a scripted sequence of runs produces
// exactly the events the publish policy allows.
func TestPublishedEventsFollowThePolicy(t *testing.T) {
	dir := t.TempDir()
	d := start(t, testConfig(t, dir, "", ""))
	sub := subscribe(t, d)
	ctx := context.Background()
	useSnapshot(t, dir, "faults.json")
	if rep, err := d.RunNow(ctx, patrol.TriggerManual); err != nil || len(rep.Findings) != 9 {
		t.Fatalf("run 1: %v %+v", err, rep)
	}
	d.RunNow(ctx, patrol.TriggerManual) // same faults: nothing but the run event
	useSnapshot(t, dir, "healthy.json")
	d.RunNow(ctx, patrol.TriggerManual) // all resolve
	ev := sub.waitCount(t, 9+1+1+9+1)
	if count(ev, "patrold.finding.opened patrol.findings.opened.") != 9 || count(ev, "patrold.finding.resolved patrol.findings.resolved.") != 9 ||
		count(ev, "patrold.run.completed patrol.runs.completed") != 3 {
		t.Fatalf("events: %v", ev)
	}
	if count(ev, "patrold.finding.opened patrol.findings.opened.critical") != 2 {
		t.Fatalf("severity in subject: %v", ev)
	}
}

// TestCommittedEventsSurviveACrash: a run committed with no relay running
// (patrold run, or a crash before publishing) is delivered by the next
// daemon on the same data dir.
func TestCommittedEventsSurviveACrash(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, "", "")
	useSnapshot(t, dir, "faults.json")
	root, _ := openRoot(t, cfg)
	if _, err := root.RunOnce(context.Background(), patrol.RunOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	root.Close()
	// The daemon's embedded server starts empty (new store dir) but the
	// outbox still holds the events: a subscriber attached before the
	// relay's first pass sees them through the stream.
	d := start(t, cfg)
	nc := natsAs(t, d, embedded.RoleSubscriber)
	js, _ := nc.JetStream()
	testkit.EventuallyState(t, 10*time.Second, "the stream holds the 10 events and the outbox none", func() (bool, string) {
		info, err := js.StreamInfo("PATROL")
		pending, _ := d.Store().PendingCount(context.Background())
		return err == nil && info.State.Msgs == 10 && pending == 0, fmt.Sprintf("stream: %+v %v, pending %d", info, err, pending)
	})
}

// clusterConfig is testConfig in cluster mode as instance name.
func clusterConfig(t *testing.T, dir, cron, natsURL, name string) *config.Config {
	t.Helper()
	cfg := testConfig(t, dir, cron, natsURL)
	cfg.Cluster = &cluster.Config{Instance: name, SecretFile: testkit.KeyFile(t)}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// scheduledRuns counts d's scheduled runs.
func scheduledRuns(t *testing.T, d *daemon.Daemon) int {
	t.Helper()
	list, err := d.Store().Runs(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range list {
		if r.Trigger == string(patrol.TriggerScheduled) {
			n++
		}
	}
	return n
}

// ownRuns are the runs in d's database that other's does not hold (in
// cluster mode a standby's database holds the leader's runs).
func ownRuns(t *testing.T, d, other *daemon.Daemon) []string {
	t.Helper()
	mine, err := d.Store().Runs(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := other.Store().Runs(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, r := range theirs {
		known[r.ID] = true
	}
	var out []string
	for _, r := range mine {
		if !known[r.ID] {
			out = append(out, r.ID+" "+r.Trigger)
		}
	}
	return out
}

// TestLeaseOneSchedulerAtATime: two daemons in cluster mode on one NATS
// server; only the lease holder runs scheduled ticks, and the other takes
// over when the holder stops (it releases the lease).
func TestLeaseOneSchedulerAtATime(t *testing.T) {
	sopts, err := embedded.ServerOptions("127.0.0.1:0", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := embedded.StartServer(sopts, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	first, second := t.TempDir(), t.TempDir()
	useSnapshot(t, first, "healthy.json")
	useSnapshot(t, second, "healthy.json")
	a := start(t, clusterConfig(t, first, "@every 1s", srv.ClientURL(), "node-a"))
	testkit.Eventually(t, 5*time.Second, "a leads", a.Leadership().HoldsLease)
	b := start(t, clusterConfig(t, second, "@every 1s", srv.ClientURL(), "node-b"))
	testkit.Eventually(t, 10*time.Second, "a runs three scheduled patrols", func() bool { return scheduledRuns(t, a) >= 3 })
	// b's database holds a's runs (replicated), none of its own.
	if got, role := ownRuns(t, b, a), b.Leadership().Role(); len(got) != 0 || role != cluster.RoleStandby {
		t.Fatalf("while a leads: b ran %v as %s, want none as standby", got, role)
	}
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, "b takes over and runs", func() bool {
		return b.Leadership().Role() == cluster.RoleLeader && scheduledRuns(t, b) >= 1
	})
}

// TestCrashedRunMarkedInterrupted: a run left "running" by a crash is an
// error (interrupted) after the next start; nothing it committed is lost.
func TestCrashedRunMarkedInterrupted(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, "", "")
	useSnapshot(t, dir, "faults.json")
	root, st := openRoot(t, cfg)
	if _, err := root.RunOnce(context.Background(), patrol.RunOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	crashed := findings.RunRecord{ID: findings.NewID(time.Now()), Trigger: "scheduled", Analysis: "deterministic", StartedAt: time.Now()}
	if err := st.StartRun(context.Background(), crashed); err != nil {
		t.Fatal(err)
	}
	root.Close()
	d := start(t, cfg)
	run, err := d.Store().Run(context.Background(), crashed.ID)
	if err != nil || run.Status != patrol.StatusError || !strings.Contains(string(run.Report), "interrupted") {
		t.Fatalf("crashed run: %+v %v", run, err)
	}
	if n, _ := d.Store().Count(context.Background()); n != 9 {
		t.Fatalf("findings of the committed run: %d", n)
	}
}

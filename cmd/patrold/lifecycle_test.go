package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/bus/embedded/natstest"
	"github.com/patrold/patrold/internal/dirlock"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/patrol"
)

// slowSource is a source block whose collection takes a while, so a run
// is in progress long enough to be overlapped if anything let it.
func slowSource(t *testing.T) string {
	t.Helper()
	snap, err := filepath.Abs(filepath.Join("..", "..", "examples", "small-faults.json"))
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("source: {kind: exec, exec: {command: [sh, -c, 'sleep 1; cat %s']}}\n", snap)
}

// TestSecondServeRefusedNamingHolder: data_dir belongs to one serve; a
// second one exits non-zero naming the holder, before it opens anything.
func TestSecondServeRefusedNamingHolder(t *testing.T) {
	cfg, data := serveConfig(t, "source: {kind: demo}\n")
	first := startPatrold(t, cfg, "serve")
	_, holder := apiOf(t, first, data)
	if holder.PID != first.cmd.Process.Pid || holder.Command != "serve" {
		t.Fatalf("lock holder %+v, want pid %d serve", holder, first.cmd.Process.Pid)
	}
	second := startPatrold(t, cfg, "serve")
	if code := second.exit(30 * time.Second); code != 1 {
		t.Fatalf("second serve exited %d, want 1:\n%s", code, second.stderr.String())
	}
	want := fmt.Sprintf("patrold: %s: data directory is held by another process: pid %d on ", data, first.cmd.Process.Pid)
	if out := second.stderr.String(); !strings.Contains(out, want) || !strings.Contains(out, "(serve, since ") {
		t.Fatalf("second serve said:\n%s\nwant it to name the holder: %s... (serve, since ...)", out, want)
	}
	first.signal(syscall.SIGTERM)
	if code := first.exit(30 * time.Second); code != 0 {
		t.Fatalf("first serve exited %d after SIGTERM", code)
	}
}

// TestRunBesideDaemonGoesThroughItsAPI: `patrold run` beside a live
// daemon asks the daemon to run (its one run lock), so runs never overlap:
// a second run while one is in progress is refused, and --snapshot is
// refused naming the holder.
func TestRunBesideDaemonGoesThroughItsAPI(t *testing.T) {
	cfg, data := serveConfig(t, slowSource(t))
	daemonProc := startPatrold(t, cfg, "serve")
	c, holder := apiOf(t, daemonProc, data)
	cl := &cli{t: t, cfg: cfg}

	type result struct {
		out  string
		code int
	}
	var wg sync.WaitGroup
	firstRes := make(chan result, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		out, code := cl.run("run", "-o", "json")
		firstRes <- result{out, code}
	}()
	testkit.Eventually(t, 10*time.Second, "the daemon runs the CLI's patrol", func() bool {
		runs := runsBy(t, c, string(patrol.TriggerAPI))
		return len(runs) == 1 && runs[0].FinishedAt == nil
	})
	runID := runsBy(t, c, string(patrol.TriggerAPI))[0].ID
	out, code := cl.run("run")
	wantBusy := fmt.Sprintf("the daemon holding %s is running %s; not started (runs never overlap)", data, runID)
	if code != 1 || !strings.Contains(out, wantBusy) {
		t.Fatalf("run during a run: exit %d, output %q; want 1 and %q", code, out, wantBusy)
	}
	out, code = cl.run("run", "--snapshot", filepath.Join("..", "..", "examples", "small-healthy.json"))
	wantHeld := fmt.Sprintf("%s: data directory is held by another process: %s; --snapshot and --replay run only without a daemon", data, holder)
	if code != 1 || !strings.Contains(out, wantHeld) {
		t.Fatalf("run --snapshot beside the daemon: exit %d, output %q; want 1 and %q", code, out, wantHeld)
	}
	wg.Wait()
	first := <-firstRes
	if first.code != 0 || !strings.Contains(first.out, `"run_id": "`+runID+`"`) || !strings.Contains(first.out, `"trigger": "api"`) {
		t.Fatalf("run through the daemon: exit %d, output:\n%s", first.code, first.out)
	}
	// The daemon ran exactly one patrol, and its database is the only one:
	// the CLI opened nothing in data_dir.
	all, err := c.RunsLimit(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].ID != runID || all[0].FinishedAt == nil {
		t.Fatalf("runs: %+v, want the one run %s, finished", all, runID)
	}
	daemonProc.signal(syscall.SIGTERM)
	if code := daemonProc.exit(30 * time.Second); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM", code)
	}
	// With the daemon gone, run takes data_dir itself.
	if out, code := cl.run("run", "--snapshot", filepath.Join("..", "..", "examples", "small-healthy.json")); code != 0 || !strings.Contains(out, "trigger=manual") {
		t.Fatalf("run without a daemon: exit %d:\n%s", code, out)
	}
}

// startExternalNATS starts a NATS server in the test process, standing
// for an external one the daemons share.
func startExternalNATS(t *testing.T) (string, func()) {
	t.Helper()
	opts, err := embedded.ServerOptions("127.0.0.1:0", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := embedded.StartServer(opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() { once.Do(func() { srv.Shutdown(); srv.WaitForShutdown() }) }
	t.Cleanup(stop)
	return srv.ClientURL(), stop
}

// TestKillNineThenRestartRunsAtStartup: a cluster-mode instance killed
// with SIGKILL leaves its lease key behind. Restarted, it is the same
// instance (the name kept in data_dir) and reclaims the key at once. Its
// startup run happens within startup_delay, not after the 30 s lease TTL.
func TestKillNineThenRestartRunsAtStartup(t *testing.T) {
	url, _ := startExternalNATS(t)
	const startupDelay = 2 * time.Second
	key := testkit.KeyFile(t)
	cfg, data := serveConfig(t, "source: {kind: demo}\ncluster: {secret_file: "+key+"}\n"+
		"nats: {url: '"+url+"', lease: {ttl: 30s}}\n"+
		"schedule: {cron: '@every 1h', startup_delay: "+startupDelay.String()+", skip_startup_if_recent: 0s}\n")
	first := startPatrold(t, cfg, "serve")
	c, _ := apiOf(t, first, data)
	testkit.Eventually(t, 30*time.Second, "the first startup run finishes", func() bool {
		runs := runsBy(t, c, string(patrol.TriggerStartup))
		return len(runs) == 1 && runs[0].FinishedAt != nil
	})
	name, err := os.ReadFile(filepath.Join(data, "instance"))
	if err != nil {
		t.Fatalf("the generated instance name is not kept in data_dir: %v", err)
	}
	first.signal(syscall.SIGKILL)
	if code := first.exit(10 * time.Second); code != -int(syscall.SIGKILL) {
		t.Fatalf("kill -9: exit %d", code)
	}

	restarted := time.Now()
	second := startPatrold(t, cfg, "serve")
	c, _ = apiOf(t, second, data)
	testkit.Eventually(t, startupDelay+10*time.Second, "the restarted instance's startup run", func() bool {
		return len(runsBy(t, c, string(patrol.TriggerStartup))) == 2
	})
	took := time.Since(restarted)
	if took >= 30*time.Second {
		t.Fatalf("startup run %s after the restart: it waited for the lease to expire", took)
	}
	runs := runsBy(t, c, string(patrol.TriggerStartup))
	sort.Slice(runs, func(i, j int) bool { return runs[i].StartedAt.Before(runs[j].StartedAt) })
	if !runs[1].StartedAt.After(restarted) {
		t.Fatalf("second startup run started %s, before the restart %s", runs[1].StartedAt, restarted)
	}
	if out := second.stderr.String(); !strings.Contains(out, "leader lease acquired") || !strings.Contains(out, "holder="+strings.TrimSpace(string(name))) {
		t.Fatalf("restarted instance did not take the lease as %s:\n%s", name, out)
	}
	second.signal(syscall.SIGTERM)
	if code := second.exit(30 * time.Second); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM", code)
	}
}

// leaseHolder reads the leader lease key from the NATS at url ("" when
// there is none, or no lease bucket yet: a daemon just started may not
// have made it).
func leaseHolder(t *testing.T, url string) string {
	t.Helper()
	js := natstest.JetStream(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, "patrold_leader")
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, "scheduler")
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(e.Value())
}

// TestGracefulStopReleasesLeaseAndSurvivesNATSOutage: a graceful stop
// deletes the lease key (another instance need not wait for its TTL); a
// graceful stop with NATS unreachable exits 0 (the events stay in the
// outbox, the lease expires on its own) and leaves data_dir free.
func TestGracefulStopReleasesLeaseAndSurvivesNATSOutage(t *testing.T) {
	url, stopNATS := startExternalNATS(t)
	key := testkit.KeyFile(t)
	cfg, data := serveConfig(t, "source: {kind: demo}\ncluster: {secret_file: "+key+", instance: node-a}\n"+
		"nats: {url: '"+url+"', lease: {ttl: 30s}}\n")
	p := startPatrold(t, cfg, "serve")
	apiOf(t, p, data)
	testkit.Eventually(t, 10*time.Second, "node-a holds the lease", func() bool { return leaseHolder(t, url) == "node-a" })
	p.signal(syscall.SIGTERM)
	if code := p.exit(30 * time.Second); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM", code)
	}
	if h := leaseHolder(t, url); h != "" {
		t.Fatalf("lease key after a graceful stop names %q, want it deleted", h)
	}

	p = startPatrold(t, cfg, "serve")
	apiOf(t, p, data)
	testkit.Eventually(t, 10*time.Second, "node-a holds the lease again", func() bool { return leaseHolder(t, url) == "node-a" })
	stopNATS()
	p.signal(syscall.SIGTERM)
	if code := p.exit(30 * time.Second); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM with NATS down:\n%s", code, p.stderr.String())
	}
	out := p.stderr.String()
	for _, want := range []string{"NATS unreachable at stop", "leader lease not released; it expires within nats.lease.ttl", "patrold stopped"} {
		if !strings.Contains(out, want) {
			t.Fatalf("stop with NATS down did not log %q:\n%s", want, out)
		}
	}
	if held, h, err := dirlock.Held(data); err != nil || held {
		t.Fatalf("data_dir still held after the stop: %v %v %v", held, h, err)
	}
}

// Package procbench measures patrold as processes: a built binary, a
// generated fleet in a file, and the figures an operator sees (CPU time
// of a process, its resident set). Every figure that can be a ratio is
// measured side by side in one iteration, so load from other work on the
// machine falls on both sides alike. docs/PERFORMANCE.md gives the
// budgets, the last measured figures and the command.
package procbench_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/internal/dirlock"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/snapshot/jsonref"
)

// decodeEnv makes the test binary decode the file it names with plain
// encoding/json (the reference) instead of running the tests.
const decodeEnv = "PROCBENCH_PLAIN_DECODE"

// settleEnv overrides settle (a Go duration): how long after its last run
// the daemon's memory is read.
const settleEnv = "PROCBENCH_SETTLE"

const token = "procbench-admin-token"

func TestMain(m *testing.M) {
	if path := os.Getenv(decodeEnv); path != "" {
		data, err := os.ReadFile(path)
		if err == nil {
			var s jsonref.Snapshot
			err = json.Unmarshal(data, &s)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if work != "" {
		os.RemoveAll(work)
	}
	os.Exit(code)
}

var (
	work     string // the binary and the fleet files, removed after the run
	buildErr error
	built    sync.Once
	fleets   = map[string]string{}
	fleetsMu sync.Mutex
)

// binary builds ./cmd/patrold once per test binary (the real binary: its
// pages are part of what the daemon keeps resident).
func binary(b *testing.B) string {
	b.Helper()
	built.Do(func() {
		if work, buildErr = os.MkdirTemp("", "procbench-"); buildErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(work, "patrold"), "github.com/patrold/patrold/cmd/patrold").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	return filepath.Join(work, "patrold")
}

// fleetFile writes the generated fleet of n resources at the fault rate
// once per test binary, and returns its path and size. It runs `patrold
// demo export --seed 1 --at 2026-11-29T06:00:00Z` in its own process, so
// this one stays small: a child's peak resident set, as the kernel
// reports it, is at least its parent's.
func fleetFile(b *testing.B, n int, faults float64) (string, int64) {
	b.Helper()
	exe := binary(b)
	fleetsMu.Lock()
	defer fleetsMu.Unlock()
	key := fmt.Sprintf("fleet-%d-%g.json", n, faults)
	path, ok := fleets[key]
	if !ok {
		path = filepath.Join(work, key)
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command(exe, "--config", "/dev/null", "demo", "export", "--seed", "1", "--at", "2026-11-29T06:00:00Z",
			"--resources", strconv.Itoa(n), "--fault-rate", strconv.FormatFloat(faults, 'g', -1, 64))
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = f, &stderr
		err = cmd.Run()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			b.Fatalf("demo export: %v\n%s", err, stderr.String())
		}
		fleets[key] = path
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return path, fi.Size()
}

// config writes a configuration on a fresh data_dir with extra YAML and
// returns its path and data_dir. It has the API on a free port with an
// admin token, and embedded NATS on a free port. It has no
// schedule within the benchmark and no assistant.
func config(b *testing.B, extra string) (string, string) {
	b.Helper()
	dir := b.TempDir()
	data := filepath.Join(dir, "var")
	body := "data_dir: " + data + "\nlog: {level: warn}\n" +
		"http: {listen: '127.0.0.1:0', tokens: [{name: admin, token: " + token + ", scope: admin}]}\n" +
		"nats: {embedded: {listen: '127.0.0.1:0'}}\nassistant: {enabled: false}\n" + extra
	if !strings.Contains(extra, "schedule:") {
		body += "schedule: {cron: '@every 24h', startup_delay: 24h}\n"
	}
	path := filepath.Join(dir, "patrold.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		b.Fatal(err)
	}
	return path, data
}

func fileSource(path string) string {
	return "source: {kind: file, file: {path: " + path + "}}\n"
}

// usage is what a finished process used: CPU time (user and system) and
// its peak resident set.
type usage struct {
	cpu  time.Duration
	peak int64 // bytes
}

// run runs the binary to its end with argv, its output discarded, and
// returns what it used.
func run(b *testing.B, exe string, env []string, argv ...string) usage {
	b.Helper()
	cmd := exec.Command(exe, argv...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s %v: %v\n%s", filepath.Base(exe), argv, err, stderr.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	u := usage{
		cpu:  time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		peak: ru.Maxrss << 10, // kB on Linux
	}
	// The kernel starts a child's peak at its parent's: only a peak above
	// this process's own is the child's.
	if own := status(b, os.Getpid(), "VmHWM:"); u.peak <= own {
		b.Fatalf("%s %v: peak resident set %d kB, not above this process's own %d kB", filepath.Base(exe), argv, u.peak>>10, own>>10)
	}
	return u
}

// validate is `patrold snapshot validate FILE`: the decode a run cannot
// go below.
func validate(b *testing.B, exe, path string) usage {
	b.Helper()
	return run(b, exe, nil, "--config", "/dev/null", "snapshot", "validate", path)
}

// plainDecode runs this test binary as a process that decodes the file
// with plain encoding/json (v1) into typed structs: every budget's
// baseline.
func plainDecode(b *testing.B, path string) usage {
	b.Helper()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	return run(b, self, []string{decodeEnv + "=" + path})
}

// BenchmarkValidateVsJSON holds `patrold snapshot validate` to the plain
// decode of the same file, CPU against CPU (x-json; budget at most 0.5).
func BenchmarkValidateVsJSON(b *testing.B) {
	exe := binary(b)
	path, _ := fleetFile(b, 100_000, 0.1)
	var ours, plain time.Duration
	for b.Loop() {
		ours += validate(b, exe, path).cpu
		plain += plainDecode(b, path).cpu
	}
	b.ReportMetric(float64(ours)/float64(plain), "x-json")
}

// BenchmarkServeRun holds a steady run inside `patrold serve` (the file
// source, every finding re-detected) to the plain decode of the same
// file. The run is started through the API, which admits it as the
// scheduler does (daemon.startRun). Each iteration runs the plain decode,
// then one run. It reports:
//   - x-json: the daemon's CPU per run / the decode's (budget at most 1.0);
//   - peak-x-json: the daemon's peak resident set over the steady runs /
//     the decode's peak (budget at most 1.0, never above 1.4);
//   - anon-MB: the daemon's anonymous memory (RssAnon) settle (30 s;
//     PROCBENCH_SETTLE) after the last run (budget at most 96).
//
// The daemon runs with the unit's environment (unitEnv).
func BenchmarkServeRun(b *testing.B) {
	exe := binary(b)
	path, _ := fleetFile(b, 100_000, 0.1)
	cfg, data := config(b, fileSource(path))
	d := serve(b, exe, cfg, data)
	d.runOnce(b) // the first run files every finding
	// The peak of the first run is not a steady run's: reset the
	// high-water mark (proc(5), clear_refs).
	d.resetPeak(b)
	var ours, plain time.Duration
	var plainPeak int64
	for b.Loop() {
		u := plainDecode(b, path)
		plain += u.cpu
		plainPeak = max(plainPeak, u.peak)
		c0 := d.cpu(b)
		d.runOnce(b)
		ours += d.cpu(b) - c0
	}
	b.StopTimer()
	peak := d.status(b, "VmHWM:")
	b.ReportMetric(float64(ours)/float64(plain), "x-json")
	b.ReportMetric(float64(peak)/float64(plainPeak), "peak-x-json")
	b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
	b.ReportMetric(float64(plainPeak)/(1<<20), "json-peak-MB")
	time.Sleep(settle(b))
	b.ReportMetric(float64(d.status(b, "RssAnon:"))/(1<<20), "anon-MB")
	b.ReportMetric(float64(d.status(b, "VmRSS:"))/(1<<20), "rss-MB")
}

// BenchmarkIdleServe reports the anonymous memory (RssAnon) of `patrold
// serve` on its defaults (the demo fleet, embedded NATS, SQLite), settle
// after its startup run (idle-anon-MB; budget at most 16). The whole
// resident set (idle-MB) is reported beside it: its file pages are
// the binary's, which the kernel reclaims as it needs.
func BenchmarkIdleServe(b *testing.B) {
	exe := binary(b)
	var total, anon int64
	for b.Loop() {
		cfg, data := config(b, "schedule: {cron: '@every 24h', startup_delay: 0s}\n")
		d := serve(b, exe, cfg, data)
		d.waitRuns(b, 1)
		time.Sleep(settle(b))
		total += d.status(b, "VmRSS:")
		anon += d.status(b, "RssAnon:")
		d.stop(b)
	}
	n := float64(b.N) * (1 << 20)
	b.ReportMetric(float64(anon)/n, "idle-anon-MB")
	b.ReportMetric(float64(total)/n, "idle-MB")
}

// settle is how long after its last run the daemon's memory is read:
// 30 s, or PROCBENCH_SETTLE.
func settle(b *testing.B) time.Duration {
	b.Helper()
	s := os.Getenv(settleEnv)
	if s == "" {
		return 30 * time.Second
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		b.Fatalf("%s: %v", settleEnv, err)
	}
	return d
}

// unitEnv is the environment deploy/patrold.service gives the daemon
// (its Environment= lines but the data_dir, which the configuration
// names here): memory policy lives at the process edge
// (CONTRIBUTING.md), so the daemon is measured as it is deployed.
func unitEnv(b *testing.B) []string {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "patrold.service"))
	if err != nil {
		b.Fatal(err)
	}
	var env []string
	for line := range strings.SplitSeq(string(raw), "\n") {
		if kv, ok := strings.CutPrefix(line, "Environment="); ok && !strings.HasPrefix(kv, "PATROLD_") {
			env = append(env, kv)
		}
	}
	if len(env) == 0 {
		b.Fatal("deploy/patrold.service sets no environment")
	}
	return env
}

// daemon is a running `patrold serve`.
type daemon struct {
	cmd    *exec.Cmd
	client *api.Client
	base   string
	stderr *bytes.Buffer
	done   chan struct{}
}

func serve(b *testing.B, exe, cfg, data string) *daemon {
	b.Helper()
	d := &daemon{cmd: exec.Command(exe, "--config", cfg, "serve"), stderr: &bytes.Buffer{}, done: make(chan struct{})}
	d.cmd.Env = append(os.Environ(), unitEnv(b)...)
	d.cmd.Stdout, d.cmd.Stderr = io.Discard, d.stderr
	if err := d.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() { d.cmd.Wait(); close(d.done) }()
	b.Cleanup(func() { d.stop(b) })
	testkit.EventuallyState(b, time.Minute, "patrold serve holds the lock with its API address", func() (bool, string) {
		d.alive(b)
		h, err := dirlock.ReadHolder(data)
		if err == nil && h != nil && h.PID == d.cmd.Process.Pid && h.API != "" && !strings.HasSuffix(h.API, ":0") {
			d.base = "http://" + h.API
			return true, ""
		}
		return false, d.stderr.String()
	})
	var err error
	if d.client, err = api.NewClient(d.base, token, &http.Client{Timeout: time.Minute}); err != nil {
		b.Fatal(err)
	}
	testkit.EventuallyState(b, time.Minute, "patrold serve answers", func() (bool, string) {
		d.alive(b)
		return d.client.Ping(context.Background()) == nil, d.stderr.String()
	})
	return d
}

// alive fails b when the daemon has ended.
func (d *daemon) alive(b *testing.B) {
	b.Helper()
	select {
	case <-d.done:
		b.Fatalf("patrold serve ended:\n%s", d.stderr.String())
	default:
	}
}

func (d *daemon) stop(b *testing.B) {
	select {
	case <-d.done:
		return
	default:
	}
	d.cmd.Process.Signal(os.Interrupt)
	select {
	case <-d.done:
	case <-time.After(time.Minute):
		d.cmd.Process.Kill()
		<-d.done
	}
}

// runOnce triggers a run through the API and waits until it has ended.
func (d *daemon) runOnce(b *testing.B) {
	b.Helper()
	ctx := context.Background()
	// The last run holds the run lock until its memory is given back, a
	// moment after it shows finished (docs/API.md): a busy answer is
	// asked again.
	var id string
	testkit.EventuallyState(b, time.Minute, "a run starts", func() (bool, string) {
		d.alive(b)
		var err error
		if id, err = d.client.TriggerRun(ctx); api.IsCode(err, api.CodePatrolAlreadyRunning) {
			return false, err.Error()
		} else if err != nil {
			b.Fatal(err)
		}
		return true, ""
	})
	testkit.EventuallyState(b, 5*time.Minute, "run "+id+" ends", func() (bool, string) {
		d.alive(b)
		// The cheap list (no report) tells when the run ended.
		runs, err := d.client.RunsLimit(ctx, 1)
		if err != nil {
			b.Fatal(err)
		}
		if len(runs) == 1 && runs[0].ID == id && runs[0].FinishedAt != nil {
			if runs[0].Status == "error" {
				b.Fatalf("run %s ended in error:\n%s", id, d.stderr.String())
			}
			return true, ""
		}
		return false, d.stderr.String()
	})
}

// waitRuns waits until the daemon has finished n runs.
func (d *daemon) waitRuns(b *testing.B, n int) {
	b.Helper()
	testkit.EventuallyState(b, time.Minute, fmt.Sprintf("%d runs finish", n), func() (bool, string) {
		d.alive(b)
		runs, err := d.client.RunsLimit(context.Background(), n)
		if err != nil {
			b.Fatal(err)
		}
		done := 0
		for _, r := range runs {
			if r.FinishedAt != nil {
				done++
			}
		}
		return done >= n, d.stderr.String()
	})
}

// cpu is the daemon's CPU time so far (user and system, every thread),
// from /proc/PID/stat in clock ticks.
func (d *daemon) cpu(b *testing.B) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", d.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name (which may hold spaces) in
	// parentheses: state is the 3rd field, utime the 14th, stime the 15th.
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc stat %q: %v %v", raw, err1, err2)
	}
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticks
}

// resetPeak resets the daemon's peak resident set (VmHWM) to its
// resident set now.
func (d *daemon) resetPeak(b *testing.B) {
	b.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", d.cmd.Process.Pid), []byte("5"), 0); err != nil {
		b.Fatal(err)
	}
}

// status reads a kB field of the daemon's /proc/PID/status, in bytes.
func (d *daemon) status(b *testing.B, field string) int64 {
	b.Helper()
	return status(b, d.cmd.Process.Pid, field)
}

// status reads a kB field of /proc/PID/status, in bytes.
func status(b *testing.B, pid int, field string) int64 {
	b.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field); ok {
			kb, err := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatalf("no %s in /proc status", field)
	return 0
}

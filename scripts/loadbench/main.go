//go:build ignore

// Command loadbench measures a patrold binary under API load, as an
// operator of a large fleet would see it: 10k open findings, 50 stored
// 10k-resource runs, 200 concurrent API readers for 30 s while the
// scheduler runs every 15 s. It reports latency percentiles per endpoint,
// the daemon's peak RSS and whether every scheduled run happened.
//
// Not part of `make test`. Usage:
//
//	go build -o /tmp/patrold ./cmd/patrold
//	go run scripts/loadbench/main.go -bin /tmp/patrold [-readers 200] [-duration 30s]
package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/mattn/go-sqlite3"
)

func main() {
	bin := flag.String("bin", "", "patrold binary under test (required)")
	readers := flag.Int("readers", 200, "concurrent API readers")
	duration := flag.Duration("duration", 30*time.Second, "how long the readers read")
	resources := flag.Int("resources", 10000, "resources in the fleet (each one carries a finding)")
	runs := flag.Int("runs", 50, "stored runs")
	every := flag.Duration("every", 15*time.Second, "schedule interval during the load")
	keep := flag.Bool("keep", false, "keep the data directory")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "loadbench: -bin is required")
		os.Exit(2)
	}
	if err := run(*bin, *readers, *duration, *resources, *runs, *every, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(1)
	}
}

func run(bin string, readers int, duration time.Duration, resources, runs int, every time.Duration, keep bool) error {
	dir, err := os.MkdirTemp("", "loadbench-")
	if err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(dir)
	}
	snap := filepath.Join(dir, "fleet.json")
	if err := writeFleet(snap, resources); err != nil {
		return err
	}
	listen := freeAddr()
	cfg := filepath.Join(dir, "patrold.yaml")
	yaml := fmt.Sprintf("data_dir: %s\nlog: {level: warn}\nhttp: {listen: '%s'}\nnats: {embedded: {listen: '127.0.0.1:0'}}\n"+
		"schedule: {cron: '@every %s', startup_delay: 1h}\nsource: {kind: file, file: {path: %s}}\n", filepath.Join(dir, "var"), listen, every, snap)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		return err
	}
	// Seed: one real 10k-resource run (10k findings), then copies of its
	// run record up to the number of stored runs.
	t0 := time.Now()
	if out, err := exec.Command(bin, "--config", cfg, "run", "--snapshot", snap, "--output", "json").Output(); err != nil {
		return fmt.Errorf("seed run: %v", err)
	} else if len(out) == 0 {
		return fmt.Errorf("seed run printed nothing")
	}
	reportBytes, err := copyRuns(filepath.Join(dir, "var", "patrold.db"), runs)
	if err != nil {
		return err
	}
	fmt.Printf("seeded in %s: %d findings, %d runs, report %d bytes each\n", time.Since(t0).Round(time.Millisecond), resources, runs, reportBytes)

	cmd := exec.Command(bin, "--config", cfg, "serve")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	base := "http://" + listen
	if err := waitReady(base, 30*time.Second); err != nil {
		return err
	}
	idle := rss(cmd.Process.Pid)

	client := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: readers, MaxConnsPerHost: readers}}
	endpoints := []string{"/api/v1/runs", "/api/v1/runs?limit=1000", "/api/v1/findings", "/api/v1/findings?state=all"}
	type sample struct {
		ep  int
		dur time.Duration
	}
	var mu sync.Mutex
	var samples []sample
	var errs atomic.Int64
	type failure struct {
		at  time.Time
		err error
	}
	var firstErr atomic.Pointer[failure]
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	var peak atomic.Int64
	go func() {
		for ctx.Err() == nil {
			if v := rss(cmd.Process.Pid); v > peak.Load() {
				peak.Store(v)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < readers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for n := i; ctx.Err() == nil; n++ {
				ep := n % len(endpoints)
				t := time.Now()
				resp, err := client.Get(base + endpoints[ep])
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != 200 {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				if err != nil {
					if ctx.Err() == nil {
						errs.Add(1)
						firstErr.CompareAndSwap(nil, &failure{time.Now(), err})
					}
					continue
				}
				mu.Lock()
				samples = append(samples, sample{ep, time.Since(t)})
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	window := time.Since(start)
	// Let a run that started in the window finish before counting.
	time.Sleep(2 * time.Second)
	if v := rss(cmd.Process.Pid); v > peak.Load() {
		peak.Store(v)
	}
	hwm := statusKB(cmd.Process.Pid, "VmHWM:")
	fmt.Printf("%d readers for %s: %d requests, %d errors; daemon RSS idle %d MB, peak %d MB (VmHWM %d MB)\n",
		readers, window.Round(time.Second), len(samples), errs.Load(), idle>>10, peak.Load()>>10, hwm>>10)
	if first := firstErr.Load(); first != nil {
		fmt.Printf("first error after %s: %s\n", first.at.Sub(start).Round(time.Millisecond), first.err)
	}
	if scheduled, err := scheduledRuns(base, start, start.Add(window)); err != nil {
		fmt.Printf("daemon not answering after the load: %v\n", err)
	} else {
		fmt.Printf("scheduled runs started in the window: %d (schedule every %s: %d expected)\n", scheduled, every, int(window/every))
	}
	fmt.Printf("%-28s %8s %10s %10s %10s\n", "endpoint", "requests", "p50", "p99", "max")
	all := []time.Duration{}
	for ep, path := range endpoints {
		var d []time.Duration
		for _, s := range samples {
			if s.ep == ep {
				d = append(d, s.dur)
			}
		}
		all = append(all, d...)
		printRow(path, d)
	}
	printRow("all", all)
	return nil
}

func printRow(name string, d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	q := func(p float64) time.Duration {
		if len(d) == 0 {
			return 0
		}
		return d[int(p*float64(len(d)-1))]
	}
	fmt.Printf("%-28s %8d %10s %10s %10s\n", name, len(d), q(0.5).Round(time.Millisecond), q(0.99).Round(time.Millisecond), q(1).Round(time.Millisecond))
}

// writeFleet writes a snapshot of n VMs on 10 nodes, each VM over the CPU
// threshold (one finding per VM).
func writeFleet(path string, n int) error {
	type res struct {
		ID      string             `json:"id"`
		Kind    string             `json:"kind"`
		Name    string             `json:"name"`
		Parent  string             `json:"parent,omitempty"`
		Status  string             `json:"status"`
		Metrics map[string]float64 `json:"metrics"`
	}
	doc := struct {
		Version   int    `json:"version"`
		TakenAt   string `json:"taken_at"`
		Source    string `json:"source"`
		Resources []res  `json:"resources"`
	}{Version: 1, TakenAt: time.Now().UTC().Format(time.RFC3339), Source: "loadbench"}
	for i := 0; i < 10; i++ {
		doc.Resources = append(doc.Resources, res{ID: fmt.Sprintf("node/n%d", i), Kind: "node", Name: fmt.Sprintf("n%d", i), Status: "online",
			Metrics: map[string]float64{"cpu_percent": 20, "memory_percent": 30}})
	}
	for i := 0; len(doc.Resources) < n; i++ {
		doc.Resources = append(doc.Resources, res{ID: fmt.Sprintf("vm/%d", 1000+i), Kind: "vm", Name: fmt.Sprintf("guest-%d", i),
			Parent: fmt.Sprintf("node/n%d", i%10), Status: "running", Metrics: map[string]float64{"cpu_percent": 95, "memory_percent": 40, "disk_percent": 30}})
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// copyRuns copies the one stored run until there are n, spread over the
// past n hours, and returns the report size.
func copyRuns(path string, n int) (int, error) {
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	cols := "trigger, status, analysis, complete, report, exchange, cost_usd"
	if db.QueryRow("SELECT 1 FROM pragma_table_info('runs') WHERE name = 'summary'").Scan(new(int)) == nil {
		cols += ", summary"
	}
	var size int
	if err := db.QueryRow("SELECT length(report) FROM runs").Scan(&size); err != nil {
		return 0, err
	}
	for i := 1; i < n; i++ {
		at := time.Now().Add(-time.Duration(i) * time.Hour).UTC().Format(time.RFC3339Nano)
		_, err := db.Exec("INSERT INTO runs (id, started_at, finished_at, "+cols+") SELECT id || '-"+strconv.Itoa(i)+"', ?, ?, "+cols+" FROM runs WHERE id NOT LIKE '%-%' LIMIT 1", at, at)
		if err != nil {
			return 0, err
		}
	}
	return size, nil
}

func scheduledRuns(base string, from, to time.Time) (int, error) {
	resp, err := http.Get(base + "/api/v1/runs?limit=1000")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var body struct {
		Runs []struct {
			Trigger   string    `json:"trigger"`
			StartedAt time.Time `json:"started_at"`
		} `json:"runs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return 0, err
	}
	n := 0
	for _, r := range body.Runs {
		if r.Trigger == "scheduled" && !r.StartedAt.Before(from) && r.StartedAt.Before(to) {
			n++
		}
	}
	return n, nil
}

func waitReady(base string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("daemon not ready within %s", within)
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// rss is the process's resident set in kB.
func rss(pid int) int64 { return statusKB(pid, "VmRSS:") }

func statusKB(pid int, field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), field) {
			v, _ := strconv.ParseInt(strings.Fields(sc.Text())[1], 10, 64)
			return v
		}
	}
	return 0
}

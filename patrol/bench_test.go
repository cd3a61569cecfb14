package patrol_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/demo"
	"github.com/patrold/patrold/snapshot/file"
	"github.com/patrold/patrold/snapshot/jsonref"
	"github.com/patrold/patrold/store"
)

var benchSizes = []int{1_000, 10_000, 100_000}

// benchFaults are the fault rates of the generated fleets: 1 % (a typical
// fleet) and 10 % (a bad day, ten times the findings to commit).
var benchFaults = []float64{0.01, 0.1}

// fleetCase names one generated fleet and holds its document.
type fleetCase struct {
	name string
	data []byte
}

// fleets generates every size at every fault rate, once per benchmark.
func fleets(b *testing.B) []fleetCase {
	b.Helper()
	var out []fleetCase
	for _, n := range benchSizes {
		for _, rate := range benchFaults {
			data, err := snapshot.Encode(demo.Generate(demo.Options{Seed: 1, Resources: n, FaultRate: rate}, time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)))
			if err != nil {
				b.Fatal(err)
			}
			out = append(out, fleetCase{name: fmt.Sprintf("resources=%d/faults=%g", n, rate), data: data})
		}
	}
	return out
}

func fleet(b *testing.B, n int) []byte {
	b.Helper()
	data, err := snapshot.Encode(demo.Generate(demo.Options{Seed: 1, Resources: n, FaultRate: 0.1}, time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)))
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkDecode measures decoding and validating a snapshot (what
// `patrold snapshot validate` does): the floor a run cannot go below.
func BenchmarkDecode(b *testing.B) {
	for _, fc := range fleets(b) {
		b.Run(fc.name, func(b *testing.B) {
			b.SetBytes(int64(len(fc.data)))
			for b.Loop() {
				if _, _, err := snapshot.Decode(fc.data, snapshot.DecodeOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkUnmarshalV1 is the reference Decode is held to: a plain
// encoding/json (v1) Unmarshal of the same document into structs that
// mirror snapshot.Snapshot's (jsonref), with no validation at all.
func BenchmarkUnmarshalV1(b *testing.B) {
	for _, fc := range fleets(b) {
		b.Run(fc.name, func(b *testing.B) {
			b.SetBytes(int64(len(fc.data)))
			for b.Loop() {
				var s jsonref.Snapshot
				if err := json.Unmarshal(fc.data, &s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDetect measures signal detection alone.
func BenchmarkDetect(b *testing.B) {
	pol, _ := alerts.New(alerts.Settings{})
	for _, n := range benchSizes {
		snap, _, _ := snapshot.Decode(fleet(b, n), snapshot.DecodeOptions{})
		b.Run(fmt.Sprintf("resources=%d", n), func(b *testing.B) {
			for b.Loop() {
				signals.Detect(snap, pol, nil)
			}
		})
	}
}

// BenchmarkRun measures a full deterministic run in steady state: decode
// and validate the snapshot, resolve thresholds, detect, file, reconcile
// against the stored findings and commit findings, events, the run record
// and outbox rows to SQLite in one transaction.
func BenchmarkRun(b *testing.B) {
	pol, _ := alerts.New(alerts.Settings{})
	for _, fc := range fleets(b) {
		data := fc.data
		b.Run(fc.name, func(b *testing.B) {
			r := benchRunner(b, pol)
			once := func() *patrol.Report {
				snap, probs, err := snapshot.Decode(data, snapshot.DecodeOptions{})
				if err != nil {
					b.Fatal(err)
				}
				rep, err := r.Run(context.Background(), patrol.TriggerManual, patrol.RunOptions{Snapshot: snap, Problems: probs})
				if err != nil {
					b.Fatal(err)
				}
				return rep
			}
			rep := once() // prime the store: later runs confirm what exists
			b.ReportMetric(float64(len(rep.Signals)), "signals")
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				once()
			}
		})
	}
}

// BenchmarkRunVsDecode holds a run to the decode it starts with, side by
// side, both from a file as in production. Every iteration decodes the
// file alone (what `patrold snapshot validate` does). It then runs from
// it through the file source (what the daemon does: detection starts
// while the file decodes). The benchmark reports the ratio of the two
// times over all iterations (x-decode), so load from other work on the
// machine falls on both alike. The goals: at most 1.2 at 1 % faults, 1.5
// at 10 %, at 100k resources.
func BenchmarkRunVsDecode(b *testing.B) {
	pol, _ := alerts.New(alerts.Settings{})
	for _, fc := range fleets(b) {
		if !strings.HasPrefix(fc.name, "resources=100000/") {
			continue
		}
		path := filepath.Join(b.TempDir(), "snapshot.json")
		if err := os.WriteFile(path, fc.data, 0o600); err != nil {
			b.Fatal(err)
		}
		b.Run(fc.name, func(b *testing.B) {
			src, err := file.New(file.Options{Path: path})
			if err != nil {
				b.Fatal(err)
			}
			r := benchRunnerWith(b, pol, src)
			run := func() {
				rep, err := r.Run(context.Background(), patrol.TriggerManual, patrol.RunOptions{})
				if err != nil {
					b.Fatal(err)
				}
				_ = rep
			}
			run() // prime the store: later runs confirm what exists
			var decoding, running time.Duration
			for b.Loop() {
				t0 := time.Now()
				if _, _, err := file.Read(path, snapshot.DecodeOptions{}); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				run()
				decoding, running = decoding+t1.Sub(t0), running+time.Since(t1)
			}
			b.ReportMetric(float64(running)/float64(decoding), "x-decode")
		})
	}
}

// benchRunner is a deterministic runner on a fresh store under b's
// temporary directory.
func benchRunner(b *testing.B, pol *alerts.Policy) *patrol.Runner {
	b.Helper()
	return benchRunnerWith(b, pol, nil)
}

// benchRunnerWith is benchRunner collecting from src.
func benchRunnerWith(b *testing.B, pol *alerts.Policy, src snapshot.Source) *patrol.Runner {
	b.Helper()
	st, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	r, err := patrol.New(patrol.Options{Store: st, Settings: func() patrol.Settings {
		return patrol.Settings{Policy: pol, Publish: findings.DefaultPublishPolicy(), Source: src}
	}})
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkFirstRun measures a run that creates every finding: a fresh
// store, so each finding is inserted with its event and opened event.
func BenchmarkFirstRun(b *testing.B) {
	pol, _ := alerts.New(alerts.Settings{})
	for _, n := range benchSizes {
		data := fleet(b, n)
		b.Run(fmt.Sprintf("resources=%d", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				b.StopTimer()
				st, err := store.Open(context.Background(), filepath.Join(b.TempDir(), fmt.Sprintf("first-%d.db", i)))
				if err != nil {
					b.Fatal(err)
				}
				i++
				r, _ := patrol.New(patrol.Options{Store: st, Settings: func() patrol.Settings {
					return patrol.Settings{Policy: pol, Publish: findings.DefaultPublishPolicy()}
				}})
				b.StartTimer()
				snap, probs, err := snapshot.Decode(data, snapshot.DecodeOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := r.Run(context.Background(), patrol.TriggerManual, patrol.RunOptions{Snapshot: snap, Problems: probs}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				st.Close()
				b.StartTimer()
			}
		})
	}
}

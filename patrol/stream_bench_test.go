package patrol

import (
	"syscall"
	"testing"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/demo"
)

// BenchmarkStreamConsume is the stream's share of a steady daemon run
// over 100k resources at 10 % faults: every batch detected, neutralised
// and filed (detectStream.consume), with the active findings of the run
// before and a plain-text memo that has seen the same fleet. Only the
// consumer is measured: the batches are decoded once, up front.
func BenchmarkStreamConsume(b *testing.B) {
	pol, err := alerts.New(alerts.Settings{})
	if err != nil {
		b.Fatal(err)
	}
	snap := demo.Generate(demo.Options{Seed: 1, Resources: 100_000, FaultRate: 0.1}, time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC))
	plain := prompt.NewPlainMemo()
	var active []findings.Finding
	for _, s := range signals.Detect(snap, pol, nil) {
		active = append(active, findings.Finding{Key: string(s.Type), Category: findings.Category(s.Category), ResourceID: s.ResourceID})
	}
	once := func() *detectStream {
		s := newDetectStream(pol, active, plain)
		for at := 0; at < len(snap.Resources); at += snapshot.DefaultKeptBatch {
			end := min(at+snapshot.DefaultKeptBatch, len(snap.Resources))
			s.kept(snapshot.Handed{Resources: snap.Resources[at:end:end], At: at, TakenAt: snap.TakenAt, Decoding: 1})
		}
		s.finish()
		plain.Round()
		return s
	}
	once() // the run before: the memo has seen this fleet
	b.ReportAllocs()
	cpu := processCPU(b)
	for b.Loop() {
		once()
	}
	b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
}

// processCPU is the CPU time (user and system) the process used so far,
// the garbage collector's included. Other work on a shared machine
// stretches wall time but not this.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

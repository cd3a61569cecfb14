package analyst_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/model/script"
	"github.com/patrold/patrold/patrol/analyst"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot/demo"
)

// BenchmarkAnalyze measures the model stages' own overhead (triage, seed
// context, composing, tool handling, grounding, recording) with a scripted
// model that reads one resource, files one finding and finishes. The
// fleets are demo fleets with 10% faulty resources.
func BenchmarkAnalyze(b *testing.B) {
	turns := []script.Turn{
		tools(get("c1", "storage/pve1/local-zfs")),
		tools(report("c2", "storage/pve1/local-zfs", "capacity", "high_disk", "critical", "usage_percent 96.3")),
		text("Done."),
	}
	for _, n := range []int{100, 1_000, 10_000} {
		snap := demo.Generate(demo.Options{Seed: 1, Resources: n, FaultRate: 0.1}, time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC))
		b.Run(fmt.Sprintf("resources=%d", n), func(b *testing.B) {
			in := input(b, snap)
			p, err := script.New(&script.Script{Turns: turns})
			if err != nil {
				b.Fatal(err)
			}
			a, err := analyst.New(analyst.Options{Provider: p})
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				p.Reset()
				analyze(b, a, in)
			}
		})
	}
}

// BenchmarkTriage measures triage over a 10,000-resource fleet.
func BenchmarkTriage(b *testing.B) {
	snap := demo.Generate(demo.Options{Seed: 1, Resources: 10_000, FaultRate: 0.1}, time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC))
	pol := defaultPolicy(b)
	sigs := signals.Detect(snap, pol, nil)
	for b.Loop() {
		analyst.NewTriage(snap, sigs, pol)
	}
}

// BenchmarkGrounding checks one report (title, description, evidence)
// against the index of 40 tool results of 16,000 characters (a long
// detection loop), built once as the results arrived.
func BenchmarkGrounding(b *testing.B) {
	results := make([]string, 40)
	for i := range results {
		var sb strings.Builder
		sb.WriteString(`{"items":[`)
		for j := 0; sb.Len() < 16000; j++ {
			if j > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `{"id":"vm/%d","metrics":{"cpu_percent":%d.%d,"memory_percent":%d}}`, i*1000+j, j%100, j%10, (j*7)%100)
		}
		sb.WriteString(`]}`)
		results[i] = sb.String()
	}
	ix := analyst.NewIndex(results)
	title, description := "High CPU on vm/1003", "vm/1003 runs at 3.3 % CPU"
	evidence := "vm/1003 at cpu_percent 3.3 and memory 21%, while vm/39010 sits at 10.0; 12 guests in total"
	if bad := ix.Unsupported("vm/1003", title, description, evidence); len(bad) != 3 {
		b.Fatalf("unsupported %v, want vm/39010, 10.0 and 12", bad)
	}
	for b.Loop() {
		ix.Unsupported("vm/1003", title, description, evidence)
	}
}

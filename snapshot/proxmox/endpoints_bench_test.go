package proxmox

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/snapshot/proxmox/pvetest"
)

// BenchmarkScaleEndpoints measures what each endpoint family costs a
// first and a steady run at 10 x 50 guests (one in ten with a snapshot),
// 20 ms a request, default options: requests (counted at the stand-in) and the time spent in them
// (the source's request duration histogram, pacing waits left out). It
// logs the table of docs/PERFORMANCE.md#requests-by-endpoint.
func BenchmarkScaleEndpoints(b *testing.B) {
	pve := pvetest.NewScale(b, 10, 50, 20*time.Millisecond)
	withSnapshots(pve, 500, 10)
	var first, steady endpointRun
	for b.Loop() {
		reg := promclient.NewRegistry()
		o := scaleOptions(b, pve)
		o.Registerer = reg
		src := newSource(b, o)
		first = endpointsOf(b, pve, src, reg)
		steady = endpointsOf(b, pve, src, reg)
		for f, s := range first.seconds {
			steady.seconds[f] -= s // the histogram counts both runs
		}
	}
	var rows []string
	for _, f := range endpointFamilies {
		if first.requests[f]+steady.requests[f] == 0 {
			continue
		}
		rows = append(rows, fmt.Sprintf("| `%s` | %d | %.2f s | %d | %.2f s |", f, first.requests[f], first.seconds[f], steady.requests[f], steady.seconds[f]))
	}
	b.Logf("wall: first %.1f s, steady %.2f s\n| family | first | in requests | steady | in requests |\n|---|---|---|---|---|\n%s",
		first.wall.Seconds(), steady.wall.Seconds(), strings.Join(rows, "\n"))
	b.ReportMetric(first.wall.Seconds(), "first-s")
	b.ReportMetric(steady.wall.Seconds(), "steady-s")
}

// endpointRun is one run's requests and seconds in requests by family.
type endpointRun struct {
	requests map[string]int
	seconds  map[string]float64
	wall     time.Duration
}

// endpointsOf runs one collection: its requests by family, and the
// seconds in requests by family of every run of src so far.
func endpointsOf(b *testing.B, pve *pvetest.Scale, src *Source, reg *promclient.Registry) endpointRun {
	b.Helper()
	run := collectAt(b, pve, src)
	out := endpointRun{requests: map[string]int{}, seconds: map[string]float64{}, wall: run.wall}
	for p, n := range pve.ByPath() {
		out.requests[endpointFamily(strings.Split(p, "/"))] += n
	}
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "patrold_source_proxmox_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "endpoint" && slices.Contains(endpointFamilies, l.GetValue()) {
					out.seconds[l.GetValue()] = m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	return out
}

package docs

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/cluster"
)

// clusterBounds derives from the code the bounds CLUSTER.md's table
// "Partitions and bounds" states, by row, for the default lease TTL and
// http.stream_ack_timeout.
func clusterBounds() map[string]time.Duration {
	ttl := bus.DefaultLeaseTTL
	return map[string]time.Duration{
		"a new writer after the writer is cut off":                            ttl + ttl/5,
		"a change read out of order waits for the one before it":              cluster.HoldBound(ttl),
		"a writer's held answer":                                              api.DefaultStreamAckTimeout,
		"a forwarded request's answer":                                        cluster.ForwardBound(api.DefaultStreamAckTimeout),
		"no writer is logged and counted after":                               cluster.NoWriterGrace,
		"the relay's longest wait before it publishes again":                  bus.RelayBackoffMax,
		"a replica behind the stream catches up before it serves a seed copy": cluster.SeedCatchUpWait,
		"each stream lookup of a seed request, before the upload":             cluster.SeedCallWait,
		"a clock off the NATS server's by more than this never leads":         bus.ClockSkewBound,
		"ready after healing":                                                 cluster.ReadyAfterHealBound(ttl),
	}
}

// TestClusterBoundsDocumented holds the table to the code both ways:
// every bound the code has is a row with its value, and every row is one
// of them.
func TestClusterBoundsDocumented(t *testing.T) {
	doc := readDoc(t, "CLUSTER.md")
	i := strings.Index(doc, "## Partitions and bounds")
	if i < 0 {
		t.Fatal(`docs/CLUSTER.md has no "## Partitions and bounds" section`)
	}
	section := doc[i:]
	if j := strings.Index(section[3:], "\n## "); j >= 0 {
		section = section[:j+3]
	}
	row := regexp.MustCompile(`(?m)^\| ([^|]+?) \| ([0-9]+) s \| [^|]+ \|$`)
	got := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		got[m[1]] = m[2] + " s"
	}
	want := clusterBounds()
	for name, d := range want {
		if v, ok := got[name]; !ok {
			t.Errorf("docs/CLUSTER.md bounds: no row %q (%s)", name, d)
		} else if w := fmt.Sprintf("%d s", int(d.Seconds())); v != w {
			t.Errorf("docs/CLUSTER.md bounds: %q is %s, the code says %s", name, v, w)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("docs/CLUSTER.md bounds: row %q is no bound the code has", name)
		}
	}
}

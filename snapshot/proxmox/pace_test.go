package proxmox

import (
	"testing"
	"time"

	"github.com/patrold/patrold/snapshot/proxmox/pvetest"
)

// TestPaceNodeRate: with source.proxmox.rate 20 (burst 5), no node of
// the stand-in sees more than 25 requests in any one second of a run
// that sends each of them 34.
func TestPaceNodeRate(t *testing.T) {
	pve := pvetest.NewScale(t, 2, 10, 0)
	o := scaleOptions(t, pve)
	o.Rate = 20
	src := newSource(t, o)
	collectAt(t, pve, src)
	for _, node := range []string{"pve1", "pve2"} {
		times := pve.NodeTimes(node)
		if len(times) <= 25 {
			t.Fatalf("%s saw %d requests; the test needs more than rate+burst", node, len(times))
		}
		for i := range times {
			n := 0
			for j := i; j < len(times) && times[j].Sub(times[i]) < time.Second; j++ {
				n++
			}
			if n > 25 {
				t.Errorf("%s: %d requests in the second from %s, want at most 25", node, n, times[i].Format(time.StampMilli))
				break
			}
		}
	}
}

// TestPaceKeepsConnectionsAlive: two runs over the stand-in open no more
// connections than nodes are read at once.
func TestPaceKeepsConnectionsAlive(t *testing.T) {
	pve := pvetest.NewScale(t, 6, 4, time.Millisecond)
	o := scaleOptions(t, pve)
	o.Rate = 1000
	src := newSource(t, o)
	collectAt(t, pve, src)
	collectAt(t, pve, src)
	if n := pve.Connections(); n > DefaultConcurrency {
		t.Errorf("two runs opened %d connections, want at most %d (concurrency)", n, DefaultConcurrency)
	}
}

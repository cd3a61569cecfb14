package proxmox

import (
	"context"
	"net/http"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/patrold/patrold/snapshot"

	"github.com/patrold/patrold/snapshot/proxmox/pvetest"
)

// TestPaceNodeRate: with source.proxmox.rate 20 (burst 5), no node of
// the stand-in sees more than 25 requests in any one second of a run
// that sends each of them 34.
func TestPaceNodeRate(t *testing.T) {
	pve := pvetest.NewScale(t, 2, 16, 0)
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

// TestPaceNodeOverlap: with node_overlap 3, a node's per-guest reads
// overlap, and never more than 3 of its requests are in flight at once;
// the snapshot is the one reads in sequence give.
func TestPaceNodeOverlap(t *testing.T) {
	pve := pvetest.NewScale(t, 2, 24, 5*time.Millisecond)
	first := func(overlap int) *snapshot.Snapshot {
		o := scaleOptions(t, pve)
		o.Rate, o.NodeOverlap = 1000, overlap
		pve.Reset()
		snap, problems, err := newSource(t, o).Collect(context.Background())
		if err != nil || len(problems) != 0 {
			t.Fatalf("node_overlap %d: err %v, problems %v", overlap, err, problems)
		}
		for _, node := range []string{"pve1", "pve2"} {
			if got := pve.Peak(node); got != overlap {
				t.Errorf("node_overlap %d: %s had %d requests in flight at once, want %d", overlap, node, got, overlap)
			}
		}
		return snap
	}
	one, three := first(1), first(3)
	if !reflect.DeepEqual(one, three) {
		t.Errorf("the snapshot read with overlap differs from the one read in sequence:\n%+v\n%+v", three, one)
	}
}

// TestPaceKeepsConnectionsAlive: two runs over the stand-in open no more
// connections than requests may be in flight at once.
func TestPaceKeepsConnectionsAlive(t *testing.T) {
	pve := pvetest.NewScale(t, 6, 16, time.Millisecond)
	o := scaleOptions(t, pve)
	o.Rate, o.Concurrency, o.NodeOverlap = 1000, 2, 2
	src := newSource(t, o)
	collectAt(t, pve, src)
	collectAt(t, pve, src)
	if n, most := pve.Connections(), 2*2; n > most {
		t.Errorf("two runs opened %d connections, want at most %d (concurrency x node_overlap)", n, most)
	}
}

// TestPaceClientBoundsConnections: the client itself never holds more
// connections than its bound, however many requests ask at once (the
// node workers keep within it; this holds if they did not).
func TestPaceClientBoundsConnections(t *testing.T) {
	pve := pvetest.NewScale(t, 1, 4, 20*time.Millisecond)
	o := scaleOptions(t, pve)
	o.Rate, o.Concurrency, o.NodeOverlap = 1000, 2, 1
	sess, err := newSource(t, o).client.session()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			errs <- sess.get(context.Background(), []string{"nodes", "pve1", "status"}, nil, func([]byte) error { return nil })
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := pve.Connections(); n > 2 {
		t.Errorf("8 requests at once opened %d connections, want at most 2", n)
	}
}

// TestPaceNodeOverlapOrder: with node_overlap 4, the failed reads of a
// node's guests are its problems in the guests' order, whichever
// answer came first: the first guest's failure is the last to come.
func TestPaceNodeOverlapOrder(t *testing.T) {
	pve := pvetest.NewScale(t, 1, 8, 2*time.Millisecond)
	pve.Guest(102, func(g *pvetest.Guest) { g.SnapshotAt = evalTime.Add(-time.Hour).Unix() })
	for _, p := range []string{"nodes/pve1/lxc/107/config", "nodes/pve1/qemu/102/snapshot", "nodes/pve1/qemu/100/config"} {
		pve.Fail(p, http.StatusInternalServerError)
	}
	pve.Slow("nodes/pve1/qemu/100/config", 200*time.Millisecond)
	o := scaleOptions(t, pve)
	o.Rate, o.NodeOverlap = 1000, 4
	_, problems, err := newSource(t, o).Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []snapshot.Problem{
		{ID: "node/pve1", Index: -1, Field: "GET /nodes/pve1/qemu/100/config", Warning: true, Problem: "node pve1: HTTP 500 Internal Server Error"},
		{ID: "node/pve1", Index: -1, Field: "GET /nodes/pve1/qemu/102/snapshot", Warning: true, Problem: "node pve1: HTTP 500 Internal Server Error"},
		{ID: "node/pve1", Index: -1, Field: "GET /nodes/pve1/lxc/107/config", Warning: true, Problem: "node pve1: HTTP 500 Internal Server Error"},
	}
	if !reflect.DeepEqual(problems, want) {
		t.Errorf("problems\n%+v\nwant\n%+v", problems, want)
	}
}

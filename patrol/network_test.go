package patrol_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/probe"
)

// netEvent is a finding event of the outbox with what identifies it and
// what it says (times and ids vary from run to run).
type netEvent struct {
	Type, Subject, ResourceID, Key, Severity, Status, Reason, InhibitedBy string
	Inhibits                                                              int
}

// findingEvents are the finding events of the outbox after the first
// from, sorted by resource then key.
func findingEvents(t *testing.T, e *env, from int) ([]netEvent, int) {
	t.Helper()
	all, err := e.store.PendingEvents(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []netEvent
	for _, x := range all[from:] {
		if x.Type == contracts.TypeRunCompleted {
			continue
		}
		var ev struct {
			Finding struct {
				ResourceID  string `json:"resource_id"`
				Key         string `json:"key"`
				Severity    string `json:"severity"`
				Status      string `json:"status"`
				InhibitedBy string `json:"inhibited_by"`
				Inhibits    int    `json:"inhibits"`
			} `json:"finding"`
			Reason string `json:"reason"`
		}
		if err := json.Unmarshal(x.Data, &ev); err != nil {
			t.Fatalf("%s: %v", x.Type, err)
		}
		f := ev.Finding
		out = append(out, netEvent{x.Type, x.Subject, f.ResourceID, f.Key, f.Severity, f.Status, ev.Reason, f.InhibitedBy, f.Inhibits})
	}
	slices.SortFunc(out, func(a, b netEvent) int { return strings.Compare(a.ResourceID+a.Key, b.ResourceID+b.Key) })
	return out, len(all)
}

// TestUnroutableNetworkHoldsItsGuests: two guests on 10.9.8.0/24 are
// unreachable; the next run the patrol host has no route to their
// network: one network finding opens and holds the guests' findings
// (not resolved, not published); a guest on another network is not
// held, nor one that answers on another address (it resolves). The
// network routes again and the guests answer: the network finding and
// the guests' resolve.
func TestUnroutableNetworkHoldsItsGuests(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	var mu sync.Mutex
	phase := "refused"
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		p := phase
		mu.Unlock()
		switch {
		case p == "unroutable" && strings.HasPrefix(addr, "10.9.8."):
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ENETUNREACH)}
		case p == "answer" && strings.HasPrefix(addr, "10.9.8."), p != "refused" && strings.HasPrefix(addr, "198.51.100."):
			return (&net.Dialer{}).DialContext(ctx, "tcp", ln.Addr().String())
		}
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	pr, err := probe.NewDialing(probe.Options{}, dial)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	e.prober = pr
	guest := func(id string, addrs ...string) snapshot.Resource {
		return snapshot.Resource{ID: id, Kind: snapshot.KindVM, Parent: "node/a", Status: snapshot.StatusRunning, Addresses: addrs}
	}
	e.src = &snapshot.Snapshot{Version: 1, Resources: []snapshot.Resource{
		{ID: "node/a", Kind: snapshot.KindNode, Status: snapshot.StatusOnline},
		guest("vm/1", "10.9.8.11:22"), guest("vm/2", "10.9.8.12:22"), guest("vm/3", "192.0.2.7:22"),
		guest("vm/4", "10.9.8.14:22", "198.51.100.4:22"),
	}}
	ctx := context.Background()
	vm1 := findings.ID("vm/1", findings.CategoryReliability, "guest_unreachable")
	vm2 := findings.ID("vm/2", findings.CategoryReliability, "guest_unreachable")
	vm3 := findings.ID("vm/3", findings.CategoryReliability, "guest_unreachable")
	netRes := "patrold/network/10.9.8.0/24"
	netID := findings.ID(netRes, findings.CategoryReliability, findings.KeyNetworkUnroutable)
	ev := func(event, res, key, sev, status, reason, by string, inhibits int) netEvent {
		return netEvent{"patrold.finding." + event, "findings." + event + "." + sev, res, key, sev, status, reason, by, inhibits}
	}
	setPhase := func(p string) {
		mu.Lock()
		phase = p
		mu.Unlock()
	}

	e.run()
	got, seen := findingEvents(t, e, 0)
	want := []netEvent{
		ev("opened", "vm/1", "guest_unreachable", "warning", "active", "first", "", 0),
		ev("opened", "vm/2", "guest_unreachable", "warning", "active", "first", "", 0),
		ev("opened", "vm/3", "guest_unreachable", "warning", "active", "first", "", 0),
		ev("opened", "vm/4", "guest_unreachable", "warning", "active", "first", "", 0),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("run 1 events\n%+v\nwant\n%+v", got, want)
	}

	// Twice: the hold lasts while the network is unroutable.
	setPhase("unroutable")
	for i := range 2 {
		rep := e.run()
		if !slices.Contains(rep.StatusReasons, patrol.ReasonProbeFailed) {
			t.Fatalf("run %d reasons %v, want %s", i+2, rep.StatusReasons, patrol.ReasonProbeFailed)
		}
		got, seen = findingEvents(t, e, seen)
		want = nil
		if i == 0 {
			// vm/4 answers on its other address: the data resolves
			// it, whatever its network in 10.9.8.0/24.
			want = []netEvent{
				ev("opened", netRes, findings.KeyNetworkUnroutable, "warning", "active", "first", "", 2),
				ev("resolved", "vm/4", "guest_unreachable", "warning", "resolved", "resolved", "", 0),
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("run %d events\n%+v\nwant\n%+v", i+2, got, want)
		}
		for id, by := range map[string]string{vm1: netID, vm2: netID, vm3: ""} {
			f, err := e.store.Get(ctx, id)
			if err != nil || !f.Active() || f.InhibitedBy != by {
				t.Fatalf("run %d: %s active %v held by %q, want active held by %q: %v", i+2, id, f.Active(), f.InhibitedBy, by, err)
			}
		}
		p, err := e.store.Get(ctx, netID)
		if err != nil || !reflect.DeepEqual(p.Explains, []string{vm1, vm2}) || p.Inhibits != 2 {
			t.Fatalf("run %d: network explains %v (%d), want [%s %s]: %v", i+2, p.Explains, p.Inhibits, vm1, vm2, err)
		}
	}

	setPhase("answer")
	e.run()
	got, _ = findingEvents(t, e, seen)
	want = []netEvent{
		ev("resolved", netRes, findings.KeyNetworkUnroutable, "warning", "resolved", "resolved", "", 0),
		ev("resolved", "vm/1", "guest_unreachable", "warning", "resolved", "resolved", "", 0),
		ev("resolved", "vm/2", "guest_unreachable", "warning", "resolved", "resolved", "", 0),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("network back events\n%+v\nwant\n%+v", got, want)
	}
	if f, err := e.store.Get(ctx, vm3); err != nil || !f.Active() || f.InhibitedBy != "" {
		t.Fatalf("vm/3: %+v %v, want active, held by nothing", f, err)
	}
}

package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/patrold/patrold/snapshot"
)

var now = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// openAddr listens on loopback and accepts (and closes) every connection.
func openAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().String()
}

// closedAddr is a loopback port that was listened on and then closed.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// slowAddr is a loopback listener with a full accept queue: the kernel drops
// further SYNs, so a connect neither succeeds nor is refused.
func slowAddr(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	for range 64 { // fill the queue until a connect hangs
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return addr
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Fatal("could not fill the accept queue of a backlog-0 listener")
	return ""
}

func guest(id string, addrs ...string) snapshot.Resource {
	return snapshot.Resource{ID: id, Kind: snapshot.KindVM, Status: snapshot.StatusRunning, Addresses: addrs}
}

func newProber(t testing.TB, opts Options) *Prober {
	t.Helper()
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func verdictOf(r snapshot.Resource) string {
	if r.Reachable == nil {
		return "null"
	}
	return fmt.Sprint(*r.Reachable)
}

func TestProbeVerdicts(t *testing.T) {
	open, closed, slow := openAddr(t), closedAddr(t), slowAddr(t)
	snap := &snapshot.Snapshot{Resources: []snapshot.Resource{
		guest("vm/open", open),
		guest("vm/closed", closed),
		guest("vm/slow", slow),
		guest("vm/mixed", closed, "no-port", open),
		guest("vm/invalid", "no-port", "127.0.0.1:0", "127.0.0.1:99999"),
	}}
	reg := promclient.NewRegistry()
	p := newProber(t, Options{Timeout: 300 * time.Millisecond, Registerer: reg})
	start := time.Now()
	res := p.Probe(context.Background(), snap, now)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("probe took %s with a 300ms timeout", d)
	}
	want := map[string]string{"vm/open": "true", "vm/closed": "false", "vm/slow": "false", "vm/mixed": "true", "vm/invalid": "null"}
	for _, r := range snap.Resources {
		if got := verdictOf(r); got != want[r.ID] {
			t.Errorf("%s reachable = %s, want %s", r.ID, got, want[r.ID])
		}
	}
	if !res.At.Equal(now) || res.Guests != 5 || res.Reachable != 2 || res.Unreachable != 2 || res.Unknown != 1 {
		t.Errorf("result counts = %+v", res)
	}
	// Every address has its own result, in order; failures keep their error.
	wantAddr := []struct {
		id, addr string
		outcome  Outcome
		errPart  string
	}{
		{"vm/open", open, OutcomeOpen, ""},
		{"vm/closed", closed, OutcomeFailed, "refused"},
		{"vm/slow", slow, OutcomeFailed, "no answer within 300ms"},
		{"vm/mixed", closed, OutcomeFailed, "refused"},
		{"vm/mixed", "no-port", OutcomeInvalid, "not host:port"},
		{"vm/mixed", open, OutcomeOpen, ""},
		{"vm/invalid", "no-port", OutcomeInvalid, "not host:port"},
		{"vm/invalid", "127.0.0.1:0", OutcomeInvalid, "1..65535"},
		{"vm/invalid", "127.0.0.1:99999", OutcomeInvalid, "1..65535"},
	}
	if len(res.Addresses) != len(wantAddr) {
		t.Fatalf("addresses = %+v", res.Addresses)
	}
	for i, w := range wantAddr {
		a := res.Addresses[i]
		if a.ResourceID != w.id || a.Address != w.addr || a.Outcome != w.outcome || a.OK != (w.outcome == OutcomeOpen) ||
			!strings.Contains(a.Error, w.errPart) || (w.errPart == "" && a.Error != "") {
			t.Errorf("address %d = %+v, want %+v", i, a, w)
		}
	}
	if d := res.Addresses[2].Duration; d < 250*time.Millisecond || d > time.Second {
		t.Errorf("slow address duration %s, want about the 300ms timeout", d)
	}
	if res.Incomplete() {
		t.Error("a probe that ran to the end reports itself incomplete")
	}
	js, err := json.Marshal(res.Addresses[1])
	if err != nil || !strings.Contains(string(js), `"outcome":"failed"`) || !strings.Contains(string(js), `"duration_ms":`) ||
		!strings.Contains(string(js), `"resource_id":"vm/closed"`) {
		t.Errorf("address JSON = %s (%v)", js, err)
	}
	expected := `
# HELP patrold_probe_guests_total Guests whose reachability the prober decided, by verdict.
# TYPE patrold_probe_guests_total counter
patrold_probe_guests_total{verdict="reachable"} 2
patrold_probe_guests_total{verdict="unknown"} 1
patrold_probe_guests_total{verdict="unreachable"} 2
# HELP patrold_probe_addresses_total Guest addresses probed by TCP connect, by outcome.
# TYPE patrold_probe_addresses_total counter
patrold_probe_addresses_total{outcome="cancelled"} 0
patrold_probe_addresses_total{outcome="failed"} 3
patrold_probe_addresses_total{outcome="invalid"} 4
patrold_probe_addresses_total{outcome="open"} 2
patrold_probe_addresses_total{outcome="unroutable"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(expected)); err != nil {
		t.Error(err)
	}
}

func TestProbeOnlyCandidates(t *testing.T) {
	closed := closedAddr(t)
	f := false
	stopped := guest("vm/stopped", closed)
	stopped.Status = snapshot.StatusStopped
	decided := guest("vm/decided", openAddr(t))
	decided.Reachable = &f
	node := snapshot.Resource{ID: "node/n", Kind: snapshot.KindNode, Status: snapshot.StatusRunning, Addresses: []string{closed}}
	ct := guest("container/ct", closed)
	ct.Kind = snapshot.KindContainer
	snap := &snapshot.Snapshot{Resources: []snapshot.Resource{stopped, decided, node, guest("vm/noaddr"), ct}}
	res := newProber(t, Options{}).Probe(context.Background(), snap, now)
	if res.Guests != 1 || len(res.Addresses) != 1 || res.Addresses[0].ResourceID != "container/ct" {
		t.Fatalf("probed %+v, want only the running container", res)
	}
	got := []string{}
	for _, r := range snap.Resources {
		got = append(got, r.ID+"="+verdictOf(r))
	}
	if want := "vm/stopped=null vm/decided=false node/n=null vm/noaddr=null container/ct=false"; strings.Join(got, " ") != want {
		t.Fatalf("verdicts %v, want %s (the source's false is kept, not overwritten by an open port)", got, want)
	}
}

// A run cancelled mid-probe must not call a guest unreachable.
func TestProbeCancelledIsNotUnreachable(t *testing.T) {
	slow, closed := slowAddr(t), closedAddr(t)
	snap := &snapshot.Snapshot{Resources: []snapshot.Resource{guest("vm/slow", slow), guest("vm/closed-and-slow", closed, slow)}}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	res := newProber(t, Options{Timeout: 5 * time.Second}).Probe(ctx, snap, now)
	for _, r := range snap.Resources {
		if r.Reachable != nil {
			t.Errorf("%s reachable = %v after the run's context ended, want null", r.ID, *r.Reachable)
		}
	}
	if res.Unknown != 2 || res.Addresses[0].Outcome != OutcomeCancelled || res.Addresses[1].Outcome != OutcomeFailed || !res.Incomplete() {
		t.Fatalf("result = %+v, want unknown verdicts and an incomplete probe", res)
	}
}

func TestProbeConcurrencyBound(t *testing.T) {
	open := openAddr(t)
	p := newProber(t, Options{Concurrency: 4})
	var mu sync.Mutex
	inFlight, peak := 0, 0
	real := p.dial
	p.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		mu.Unlock()
		defer func() { mu.Lock(); inFlight--; mu.Unlock() }()
		time.Sleep(10 * time.Millisecond)
		return real(ctx, network, addr)
	}
	snap := &snapshot.Snapshot{}
	for i := range 20 {
		snap.Resources = append(snap.Resources, guest(fmt.Sprintf("vm/%d", i), open, open))
	}
	res := p.Probe(context.Background(), snap, now)
	if res.Reachable != 20 {
		t.Fatalf("reachable %d of 20", res.Reachable)
	}
	if peak != 4 {
		t.Fatalf("peak connects in flight = %d, want exactly the bound 4", peak)
	}
}

func TestOptions(t *testing.T) {
	for opts, want := range map[Options]string{
		{Timeout: -time.Second}: "source.probe.timeout: must not be negative",
		{Concurrency: -1}:       "source.probe.concurrency: must not be negative",
	} {
		if _, err := New(opts); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New(%+v) = %v, want %q", opts, err, want)
		}
	}
	p := newProber(t, Options{})
	if p.timeout != DefaultTimeout || p.concurrency != DefaultConcurrency {
		t.Errorf("defaults not applied: %s %d", p.timeout, p.concurrency)
	}
	// A second prober on the same registry (a reload) shares the metrics
	// built once; registering them twice is refused.
	reg := promclient.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	a, b := newProber(t, Options{Metrics: m}), newProber(t, Options{Metrics: m})
	if a.metrics != b.metrics || a.metrics != m.m {
		t.Error("probers built with the same Metrics count into different collectors")
	}
	if _, err := New(Options{Registerer: reg}); err == nil || err.Error() != "register metrics: duplicate metrics collector registration attempted" {
		t.Errorf("second registration on one registry: %v", err)
	}
}

func BenchmarkProbe(b *testing.B) {
	open := openAddr(b)
	p := newProber(b, Options{})
	for b.Loop() {
		snap := &snapshot.Snapshot{}
		for i := range 100 {
			snap.Resources = append(snap.Resources, guest(fmt.Sprintf("vm/%d", i), open))
		}
		if res := p.Probe(context.Background(), snap, now); res.Reachable != 100 {
			b.Fatalf("reachable %d", res.Reachable)
		}
	}
}

// TestLocalStackErrorIsNotTheGuests: "network is unreachable" and "no
// route to host" from the patrol host's own stack leave the verdict
// unknown (no guest_unreachable for every guest of one unroutable VLAN),
// are reported once per network, and make the probe incomplete.
func TestLocalStackErrorIsNotTheGuests(t *testing.T) {
	open, closed := openAddr(t), closedAddr(t)
	p := newProber(t, Options{})
	real := p.dial
	p.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		switch {
		case strings.HasPrefix(addr, "192.0.2."):
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ENETUNREACH)}
		case strings.HasPrefix(addr, "[2001:db8:"):
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}
		}
		return real(ctx, network, addr)
	}
	snap := &snapshot.Snapshot{Resources: []snapshot.Resource{
		guest("vm/1", "192.0.2.10:22"),
		guest("vm/2", "192.0.2.11:22"),
		guest("vm/3", "192.0.2.12:22", open),   // another address answers: reachable
		guest("vm/4", "192.0.2.13:22", closed), // refused elsewhere, unroutable here: unknown
		guest("vm/5", "[2001:db8:0:1::5]:22"),
		guest("vm/6", closed), // a real refusal is still the guest's
	}}
	res := p.Probe(context.Background(), snap, now)
	var verdicts []string
	for _, r := range snap.Resources {
		v := "unknown"
		if r.Reachable != nil {
			v = strconv.FormatBool(*r.Reachable)
		}
		verdicts = append(verdicts, r.ID+"="+v)
	}
	if got, want := strings.Join(verdicts, " "), "vm/1=unknown vm/2=unknown vm/3=true vm/4=unknown vm/5=unknown vm/6=false"; got != want {
		t.Errorf("verdicts %s, want %s", got, want)
	}
	want := []Unroutable{
		{Network: "192.0.2.0/24", Error: "not probed: dial tcp: connect: network is unreachable", Addresses: 4},
		{Network: "2001:db8:0:1::/64", Error: "not probed: dial tcp: connect: no route to host", Addresses: 1},
	}
	if !reflect.DeepEqual(res.Unroutable, want) {
		t.Errorf("unroutable\n%+v\nwant\n%+v", res.Unroutable, want)
	}
	if !res.Incomplete() || res.Reachable != 1 || res.Unreachable != 1 || res.Unknown != 4 {
		t.Errorf("result %+v", res)
	}
}

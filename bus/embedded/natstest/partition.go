package natstest

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/patrold/patrold/bus/embedded"
)

// Net is a JetStream cluster of embedded nats-servers whose routes run
// through TCP proxies the test cuts and heals: a partition without
// firewall rules. Clients see only the server they dial.
type Net struct {
	Servers []*server.Server
	URLs    []string // each server's client URL, in order
	links   map[[2]int]*link
}

// link is the proxy server from uses to reach server to's route port.
type link struct {
	l      net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

// PartitionCluster starts n embedded nats-servers with JetStream
// (nats-1..n), clustered on loopback through one proxy per ordered pair
// of servers. A server advertises no route address and no client URLs,
// so every route passes a proxy and a client stays on the server it
// dialled. Everything stops when the test ends.
func PartitionCluster(t testing.TB, n int) *Net {
	t.Helper()
	nw := &Net{links: map[[2]int]*link{}}
	ports := make([]int, n)
	for i := range ports {
		ports[i] = FreePort(t)
	}
	// A route address gossiped to another server would let it dial past
	// the proxies: advertise one that closes every connection.
	sink := blackHole(t)
	for i := range n {
		for j := range n {
			if i != j {
				nw.links[[2]int{i, j}] = startLink(t, fmt.Sprintf("127.0.0.1:%d", ports[j]))
			}
		}
	}
	for i := range n {
		o, err := embedded.ServerOptions("127.0.0.1:0", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		var routes []string
		for j := range n {
			if j != i {
				routes = append(routes, "nats-route://"+nw.links[[2]int{i, j}].l.Addr().String())
			}
		}
		o.ServerName = fmt.Sprintf("nats-%d", i+1)
		o.Cluster = server.ClusterOpts{Name: "patrol-test", Host: "127.0.0.1", Port: ports[i], Advertise: sink, NoAdvertise: true}
		o.Routes = server.RoutesFromStr(strings.Join(routes, ","))
		srv, err := server.NewServer(o)
		if err != nil {
			t.Fatal(err)
		}
		srv.Start()
		t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
		// A loaded machine (a load of 17 on 2 cores) took over 10 s.
		if !srv.ReadyForConnections(30 * time.Second) {
			t.Fatalf("nats-%d not ready", i+1)
		}
		nw.Servers = append(nw.Servers, srv)
		nw.URLs = append(nw.URLs, srv.ClientURL())
	}
	waitMetaLeader(t, nw.URLs)
	return nw
}

// Cut partitions server i from every other: its routes close and no new
// one connects until Heal.
func (nw *Net) Cut(i int) { nw.set(i, true) }

// Heal lets server i's routes connect again.
func (nw *Net) Heal(i int) { nw.set(i, false) }

func (nw *Net) set(i int, cut bool) {
	for k, l := range nw.links {
		if k[0] == i || k[1] == i {
			l.setCut(cut)
		}
	}
}

// Routes counts the routes server i has now (pooled connections each).
func (nw *Net) Routes(i int) int {
	return nw.Servers[i].NumRoutes()
}

func startLink(t testing.TB, target string) *link {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lk := &link{l: l, target: target}
	t.Cleanup(func() { l.Close(); lk.setCut(true) })
	go lk.serve()
	return lk
}

func (lk *link) serve() {
	for {
		c, err := lk.l.Accept()
		if err != nil {
			return
		}
		go lk.pipe(c)
	}
}

// pipe connects an accepted connection to the target while the link is
// not cut.
func (lk *link) pipe(c net.Conn) {
	lk.mu.Lock()
	cut := lk.cut
	lk.mu.Unlock()
	if cut {
		c.Close()
		return
	}
	u, err := net.DialTimeout("tcp", lk.target, 2*time.Second)
	if err != nil {
		c.Close()
		return
	}
	lk.mu.Lock()
	if lk.cut {
		lk.mu.Unlock()
		c.Close()
		u.Close()
		return
	}
	lk.conns = append(lk.conns, c, u)
	lk.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(u, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, u); done <- struct{}{} }()
	<-done
	c.Close()
	u.Close()
}

func (lk *link) setCut(cut bool) {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	lk.cut = cut
	if cut {
		for _, c := range lk.conns {
			c.Close()
		}
		lk.conns = nil
	}
}

// blackHole is an address that accepts connections and closes them.
func blackHole(t testing.TB) string {
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

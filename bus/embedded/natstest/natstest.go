// Package natstest is test support for patrold's NATS tests: an embedded
// JetStream server, a JetStream cluster of embedded nats-servers on
// loopback, and a reader that counts what the patrol stream holds. Only tests import it.
package natstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/contracts"
)

// FreePort is a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Server starts one embedded nats-server with JetStream on a free
// loopback port (its store under t.TempDir()); it shuts down when the test
// ends.
func Server(t testing.TB) *server.Server {
	t.Helper()
	o, err := embedded.ServerOptions("127.0.0.1:0", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := embedded.StartServer(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	return srv
}

// Cluster starts n embedded nats-servers with JetStream (each with its own
// store under t.TempDir()), clustered on loopback by routes, and returns
// their client URLs once JetStream has a meta leader. The servers shut
// down when the test ends.
func Cluster(t testing.TB, n int) []string {
	t.Helper()
	urls := make([]string, 0, n)
	for _, srv := range ClusterServers(t, n) {
		urls = append(urls, srv.ClientURL())
	}
	return urls
}

// ClusterServers is Cluster returning the servers (named nats-1..n), for
// a test that shuts one down.
func ClusterServers(t testing.TB, n int) []*server.Server {
	t.Helper()
	// The route ports are picked ahead (every server routes to all), and
	// another test process may take one in between: then the cluster is
	// formed again on new ports, up to three times.
	var srvs []*server.Server
	var urls []string
	for attempt := 1; ; attempt++ {
		var err error
		if srvs, urls, err = startCluster(t, n); err == nil {
			break
		}
		if attempt == 3 {
			t.Fatal(err)
		}
		t.Logf("cluster not formed (%v); again on new ports", err)
	}
	waitMetaLeader(t, urls)
	return srvs
}

// startCluster starts n servers routed to each other on ports picked
// ahead. A server that does not come up stops all of them: its error
// says which.
func startCluster(t testing.TB, n int) ([]*server.Server, []string, error) {
	t.Helper()
	ports := make([]int, n)
	routes := make([]string, n)
	for i := range ports {
		ports[i] = FreePort(t)
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", ports[i])
	}
	srvs := make([]*server.Server, 0, n)
	urls := make([]string, 0, n)
	stop := func() {
		for _, s := range srvs {
			s.Shutdown()
			s.WaitForShutdown()
		}
	}
	for i := range n {
		o, err := embedded.ServerOptions("127.0.0.1:0", t.TempDir())
		if err != nil {
			stop()
			return nil, nil, err
		}
		o.ServerName = fmt.Sprintf("nats-%d", i+1)
		o.Cluster = server.ClusterOpts{Name: "patrol-test", Host: "127.0.0.1", Port: ports[i]}
		o.Routes = server.RoutesFromStr(strings.Join(routes, ","))
		srv, err := server.NewServer(o)
		if err != nil {
			stop()
			return nil, nil, err
		}
		srv.Start()
		srvs = append(srvs, srv)
		if !srv.ReadyForConnections(10 * time.Second) {
			stop()
			return nil, nil, fmt.Errorf("nats-%d not ready", i+1)
		}
		urls = append(urls, srv.ClientURL())
	}
	t.Cleanup(stop)
	return srvs, urls, nil
}

// waitMetaLeader waits until the JetStream cluster of urls has a meta
// leader.
func waitMetaLeader(t testing.TB, urls []string) {
	t.Helper()
	nc, err := nats.Connect(strings.Join(urls, ","))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("JetStream cluster has no meta leader after 30s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// JetStream connects to url and returns its JetStream context; the
// connection closes when the test ends.
func JetStream(t testing.TB, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// Counts is what the patrol stream holds, counted.
type Counts struct {
	Opened   map[string]int // finding id -> opened events
	Requests map[string]int // "finding/attempt" -> remediation requests
	Outcomes map[string]int // "finding/attempt" -> remediation outcomes
}

// Unanswered lists the requests ("finding/attempt") with no outcome.
func (c Counts) Unanswered() []string {
	var out []string
	for k := range c.Requests {
		if c.Outcomes[k] == 0 {
			out = append(out, k)
		}
	}
	return out
}

// Messages reads every message of the patrol stream
// (contracts.DefaultStreamName) through url, in stream order.
func Messages(t testing.TB, url string) []*jetstream.RawStreamMsg {
	t.Helper()
	js := JetStream(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, contracts.DefaultStreamName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatalf("stream seq %d: %v", seq, err)
		}
		out = append(out, m)
	}
	return out
}

// ReadStream reads every message of the patrol stream (contracts.DefaultStreamName)
// through url, in order, and counts opened events, remediation requests
// and outcomes. A message that is not a patrold event fails the test.
func ReadStream(t testing.TB, url string) Counts {
	t.Helper()
	c := Counts{Opened: map[string]int{}, Requests: map[string]int{}, Outcomes: map[string]int{}}
	for _, m := range Messages(t, url) {
		seq := m.Sequence
		ev, err := contracts.DecodeEvent(m.Data)
		if err != nil {
			t.Fatalf("stream seq %d: %v", seq, err)
		}
		var d struct {
			Finding   struct{ ID string } `json:"finding"`
			FindingID string              `json:"finding_id"`
			Attempt   int                 `json:"attempt"`
		}
		switch ev.Type {
		case contracts.TypeFindingPrefix + string(contracts.FindingOpened), contracts.TypeRemediationRequest, contracts.TypeRemediationOutcome:
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatalf("stream seq %d (%s): data: %v", seq, ev.Type, err)
			}
		}
		switch ev.Type {
		case contracts.TypeFindingPrefix + string(contracts.FindingOpened):
			c.Opened[d.Finding.ID]++
		case contracts.TypeRemediationRequest:
			c.Requests[fmt.Sprintf("%s/%d", d.FindingID, d.Attempt)]++
		case contracts.TypeRemediationOutcome:
			c.Outcomes[fmt.Sprintf("%s/%d", d.FindingID, d.Attempt)]++
		}
	}
	return c
}

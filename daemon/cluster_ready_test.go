package daemon_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/bus/embedded/natstest"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/internal/testkit"
)

// TestReadyNeedsAWriter: in cluster mode an instance is ready only while
// some instance holds the leader lease. With NATS gone, neither the
// writer (its lease runs out) nor the standby knows of a writer: both
// turn unready (no_writer) within a TTL or two, each saying so once and
// counting it in patrold_cluster_no_writer_total.
func TestReadyNeedsAWriter(t *testing.T) {
	srv, a, b, regA, regB := readyPair(t)
	srv.Shutdown()
	srv.WaitForShutdown()
	for _, base := range []string{"http://" + a.HTTPAddr(), "http://" + b.HTTPAddr()} {
		testkit.EventuallyState(t, 15*time.Second, base+" unready without a writer", func() (bool, string) {
			code, msg, _ := unreadyOf(t, base)
			return code == http.StatusServiceUnavailable && strings.Contains(msg, "no_writer: no instance holds the leader lease"), msg
		})
	}
	for _, reg := range []prometheus.Gatherer{regA, regB} {
		testkit.EventuallyState(t, 10*time.Second, "no writer counted once", func() (bool, string) {
			n := counterOf(t, reg, "patrold_cluster_no_writer_total")
			return n == 1, fmt.Sprint(n)
		})
	}
}

// readyPair starts two instances on one NATS server, node-a the writer,
// and waits until both are ready. They stop when the test ends.
func readyPair(t *testing.T) (*server.Server, *daemon.Daemon, *daemon.Daemon, prometheus.Gatherer, prometheus.Gatherer) {
	t.Helper()
	srv := natstest.Server(t)
	key := testkit.KeyFile(t)
	shared := t.TempDir()
	useSnapshot(t, shared, "faults.json")
	a, regA, _ := clusterNode(t, srv.ClientURL(), key, shared, "node-a")
	t.Cleanup(func() { a.Stop(context.Background()) })
	testkit.Eventually(t, 15*time.Second, "node-a writes", a.IsWriter)
	b, regB, _ := clusterNode(t, srv.ClientURL(), key, shared, "node-b")
	t.Cleanup(func() { b.Stop(context.Background()) })
	for _, base := range []string{"http://" + a.HTTPAddr(), "http://" + b.HTTPAddr()} {
		testkit.EventuallyState(t, 15*time.Second, base+" ready", func() (bool, string) {
			code, msg, _ := unreadyOf(t, base)
			return code == http.StatusOK, msg
		})
	}
	return srv, a, b, regA, regB
}

// counterOf is the value of the one series of counter name in g.
func counterOf(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

// TestReadyNeedsTheStream: in cluster mode an instance whose patrol
// stream is gone (its JetStream store lost, or deleted) replicates
// nothing, whoever holds the lease: every instance turns unready
// (stream_lost), counting it once in patrold_replica_stream_lost_total.
// Before, every instance stayed ready (docs/CLUSTER.md).
func TestReadyNeedsTheStream(t *testing.T) {
	srv, a, b, regA, regB := readyPair(t)
	bases := []string{"http://" + a.HTTPAddr(), "http://" + b.HTTPAddr()}
	js := natstest.JetStream(t, srv.ClientURL())
	if err := js.DeleteStream(context.Background(), contracts.DefaultStreamName); err != nil {
		t.Fatal(err)
	}
	want := "stream_lost: state stream " + contracts.DefaultStreamName + " is not found (deleted, or its JetStream store lost)"
	for _, base := range bases {
		testkit.EventuallyState(t, 30*time.Second, base+" unready without the stream", func() (bool, string) {
			code, msg, _ := unreadyOf(t, base)
			return code == http.StatusServiceUnavailable && strings.Contains(msg, want), msg
		})
	}
	for _, reg := range []prometheus.Gatherer{regA, regB} {
		if n := counterOf(t, reg, "patrold_replica_stream_lost_total"); n != 1 {
			t.Errorf("patrold_replica_stream_lost_total = %v, want 1", n)
		}
	}
}

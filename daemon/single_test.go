package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/bus/embedded/natstest"
	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/store"
)

// natsServer is an embedded server that can be stopped and started again
// on the same port and store directory (an outage of an external NATS).
type natsServer struct {
	t    *testing.T
	opts *server.Options
	srv  *server.Server
}

func startNATS(t *testing.T) *natsServer {
	t.Helper()
	opts, err := embedded.ServerOptions("127.0.0.1:0", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	n := &natsServer{t: t, opts: opts}
	n.start()
	// Keep the port the first start picked for the restarts.
	n.opts.Port = n.srv.Addr().(*net.TCPAddr).Port
	t.Cleanup(n.stop)
	return n
}

func (n *natsServer) start() {
	n.t.Helper()
	srv, err := embedded.StartServer(n.opts, nil)
	if err != nil {
		n.t.Fatal(err)
	}
	n.srv = srv
}

func (n *natsServer) stop() {
	if n.srv != nil {
		n.srv.Shutdown()
		n.srv.WaitForShutdown()
		n.srv = nil
	}
}

func (n *natsServer) url() string { return n.srv.ClientURL() }

// streamRunIDs reads every runs.completed event in the stream: the run ids
// in stream order and the event ids.
func streamRunIDs(t *testing.T, url string) (runs, ids []string) {
	t.Helper()
	js := natstest.JetStream(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := js.Stream(ctx, "PATROL")
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := stream.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.Subject != "patrol.runs.completed" {
			continue
		}
		var ev struct {
			ID   string `json:"id"`
			Data struct {
				RunID string `json:"run_id"`
			} `json:"data"`
		}
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			t.Fatalf("event %d: %v", seq, err)
		}
		runs, ids = append(runs, ev.Data.RunID), append(ids, ev.ID)
	}
	return runs, ids
}

// storedRunIDs are the ids of the finished runs in the (closed) database
// of cfg, sorted.
func storedRunIDs(t *testing.T, cfg *config.Config) []string {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(cfg.DataDir, daemon.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	list, err := st.Runs(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range list {
		if r.FinishedAt != nil {
			out = append(out, r.ID)
		}
	}
	slices.Sort(out)
	return out
}

// TestSingleInstanceSchedulesWhileNATSIsDown: without a cluster section
// there is no lease. So an outage of the (external) NATS for three
// schedule intervals stops nothing. Every scheduled run happens, their
// events wait in the outbox, and once NATS is back each arrives exactly
// once.
func TestSingleInstanceSchedulesWhileNATSIsDown(t *testing.T) {
	ns := startNATS(t)
	dir := t.TempDir()
	useSnapshot(t, dir, "faults.json")
	cfg := testConfig(t, dir, "@every 1s", ns.url())
	d := start(t, cfg)
	if role := d.Leadership().Role(); role != cluster.RoleSingle {
		t.Fatalf("role %s, want single", role)
	}
	pending := func() int64 {
		n, err := d.Store().PendingCount(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	testkit.Eventually(t, 10*time.Second, "a first scheduled run is published", func() bool {
		return scheduledRuns(t, d) >= 1 && pending() == 0
	})

	ns.stop()
	before := scheduledRuns(t, d)
	testkit.Eventually(t, 10*time.Second, "three scheduled runs during the outage", func() bool {
		return scheduledRuns(t, d) >= before+3
	})
	if pending() == 0 {
		t.Fatal("nothing waits in the outbox during the outage")
	}
	if !d.Leadership().HoldsLease() {
		t.Fatal("a single instance stopped being the writer during the outage")
	}

	ns.start()
	testkit.Eventually(t, 20*time.Second, "the outbox drains after NATS returns", func() bool { return pending() == 0 })
	if err := d.Stop(context.Background()); err != nil {
		t.Fatalf("stop: %v", err)
	}
	runs, ids := streamRunIDs(t, ns.url())
	slices.Sort(runs)
	if want := storedRunIDs(t, cfg); !slices.Equal(runs, want) {
		t.Fatalf("runs.completed events for runs\n%v\nwant one per stored run\n%v", runs, want)
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("event %s is in the stream twice", id)
		}
		seen[id] = true
	}
}

package daemon_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/bus/embedded/natstest"
	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/store"
	"github.com/patrold/patrold/store/storetest"
)

// TestDBSeed: a new instance takes a copy of a running instance's
// database over NATS; an existing database is replaced only with force,
// and kept; without a cluster section the command is refused.
func TestDBSeed(t *testing.T) {
	srv := natstest.Server(t)
	urls := []string{srv.ClientURL()}
	key := testkit.KeyFile(t)
	shared := t.TempDir()
	useSnapshot(t, shared, "faults.json")
	clustered := func(dir, name string) *config.Config {
		t.Helper()
		cfg, err := config.Load([]byte("data_dir: "+dir+"\nlog: {level: warn}\nhttp: {listen: '127.0.0.1:0'}\n"+
			"cluster: {secret_file: "+key+", instance: "+name+"}\nnats: {url: '"+urls[0]+"', lease: {ttl: 3s}}\n"+
			"schedule: {cron: '@every 1h', startup_delay: 1h}\n"+
			"source: {kind: file, file: {path: "+filepath.Join(shared, "snapshot.json")+"}}\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	reg := prometheus.NewRegistry()
	d, err := daemon.New(daemon.Options{Config: clustered(t.TempDir(), "node-1"), Registerer: reg, Gatherer: reg, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer d.Stop(context.Background())
	testkit.Eventually(t, 15*time.Second, "node-1 writes", d.IsWriter)
	if _, err := d.RunNow(context.Background(), patrol.TriggerManual); err != nil {
		t.Fatal(err)
	}
	want, err := d.Store().List(context.Background(), findings.ListFilter{})
	if err != nil || len(want) == 0 {
		t.Fatalf("node-1 findings: %v, %v", want, err)
	}

	dir := t.TempDir()
	seed := func(force bool) (cluster.SeedResult, error) {
		root, err := daemon.NewRoot(clustered(dir, "node-2"), daemon.RootOptions{Stderr: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		return root.Seed(context.Background(), force)
	}
	var res cluster.SeedResult
	testkit.Eventually(t, 15*time.Second, "node-1 serves a copy (caught up)", func() bool {
		res, err = seed(false)
		return err == nil
	})
	if res.Origin != "node-1" || res.AppliedSeq == 0 || res.Database != filepath.Join(dir, daemon.DBFile) || res.Backup != "" {
		t.Fatalf("seed result %+v", res)
	}
	st, err := store.Open(context.Background(), res.Database)
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.List(context.Background(), findings.ListFilter{})
	status, _ := st.ReplicaStatus(context.Background())
	pending, _ := st.PendingCount(context.Background())
	st.Close()
	if err != nil || !reflect.DeepEqual(got, want) || status.AppliedSeq != res.AppliedSeq || pending != 0 {
		t.Fatalf("seeded findings %+v (%v), want %+v; status %+v; %d pending", got, err, want, status, pending)
	}
	// The writer's outbox (its events, sent or not) stays with the writer.
	var rows int
	if err := storetest.RawDB(t, res.Database).QueryRow("SELECT count(*) FROM outbox").Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("the copy holds %d outbox rows (%v)", rows, err)
	}

	_, err = seed(false)
	var ce *daemon.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "--force: "+res.Database+" exists") {
		t.Fatalf("seed over an existing database: %v", err)
	}
	again, err := seed(true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(again.Backup); err != nil || !strings.HasPrefix(again.Backup, res.Database+".before-seed-") {
		t.Fatalf("backup %q: %v", again.Backup, err)
	}

	single, err := config.Load([]byte("data_dir: "+t.TempDir()+"\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	root, err := daemon.NewRoot(single, daemon.RootOptions{Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if _, err := root.Seed(context.Background(), false); !errors.As(err, &ce) || !strings.Contains(err.Error(), "this configuration has no cluster section") {
		t.Fatalf("seed without cluster: %v", err)
	}
}

// An instance whose database cannot catch up (the stream dropped changes
// it never applied) never writes: it releases the lease it won instead of
// holding it, and says why in its status.
func TestGappedInstanceReleasesTheLease(t *testing.T) {
	srv := natstest.Server(t)
	key := testkit.KeyFile(t)
	shared := t.TempDir()
	useSnapshot(t, shared, "faults.json")
	start := func(name string) *daemon.Daemon {
		d, _, _ := clusterNode(t, srv.ClientURL(), key, shared, name)
		return d
	}
	a := start("node-a")
	testkit.Eventually(t, 15*time.Second, "node-a writes", a.IsWriter)
	if _, err := a.RunNow(context.Background(), patrol.TriggerManual); err != nil {
		t.Fatal(err)
	}
	if err := a.Stop(context.Background()); err != nil { // releases the lease
		t.Fatal(err)
	}
	// The changes age out of the stream.
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	s, err := js.Stream(context.Background(), contracts.DefaultStreamName)
	if err != nil {
		t.Fatal(err)
	}
	// All but the last state change age out.
	if err := s.Purge(context.Background(), jetstream.WithPurgeSubject(contracts.FullSubject(contracts.DefaultSubjectPrefix, contracts.SubjectStateChanges)),
		jetstream.WithPurgeKeep(1)); err != nil {
		t.Fatal(err)
	}

	kv, err := js.KeyValue(context.Background(), contracts.DefaultLeaseBucket)
	if err != nil {
		t.Fatal(err)
	}
	// Every write of the lease key from now on: node-b must take it and
	// then give it back.
	w, err := kv.Watch(context.Background(), daemon.LeaseKey, jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	var ops []string
	go func() {
		for e := range w.Updates() {
			if e == nil {
				continue
			}
			mu.Lock()
			ops = append(ops, e.Operation().String()+" "+string(e.Value()))
			mu.Unlock()
		}
	}()
	b := start("node-b")
	defer b.Stop(context.Background())
	var st api.Status
	testkit.Eventually(t, 20*time.Second, "node-b reports the gap, took the lease and released it", func() bool {
		v, err := b.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		st = v
		mu.Lock()
		defer mu.Unlock()
		took := -1
		for i, op := range ops {
			if op == "KeyValuePutOp node-b" && took < 0 {
				took = i
			}
			if took >= 0 && i > took && strings.HasPrefix(op, "KeyValueDeleteOp") {
				_, err := kv.Get(context.Background(), daemon.LeaseKey)
				return st.Replica != nil && st.Replica.Gap != "" && errors.Is(err, jetstream.ErrKeyNotFound)
			}
		}
		return false
	})
	if b.IsWriter() || !strings.Contains(st.Replica.Gap, "re-seed it (patrold db seed)") {
		t.Fatalf("writer %v, status %+v", b.IsWriter(), st.Replica)
	}
}

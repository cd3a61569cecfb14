package docs

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/bus/embedded/natstest"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/patrol"
)

// wireDaemon is a daemon with its embedded NATS server and a subscriber
// that keeps every message published under patrol.>, in order.
type wireDaemon struct {
	d    *daemon.Daemon
	mu   sync.Mutex
	msgs [][]byte
}

// startWireDaemon starts a daemon whose source is the snapshot file at
// snap (autonomy assisted, so remediation requests go out too).
func startWireDaemon(t *testing.T, snap string) *wireDaemon {
	t.Helper()
	dir := t.TempDir()
	yaml := "data_dir: " + dir + "\nlog: {level: error}\nhttp: {listen: '127.0.0.1:0'}\n" +
		"nats: {embedded: {listen: '127.0.0.1:0'}}\nschedule: {startup_delay: 1h}\n" +
		"patrol: {autonomy: assisted}\nassistant: {enabled: false}\n" +
		"source: {kind: file, file: {path: " + snap + "}}\n"
	cfg, err := config.Load([]byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	d, err := daemon.New(daemon.Options{Config: cfg, Registerer: reg, Gatherer: reg, Stderr: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(context.Background()) })
	nc := natstest.ConnectRole(t, d.NATSURL(), cfg.DataDir, embedded.RoleDaemon)
	w := &wireDaemon{d: d}
	if _, err = nc.Subscribe("patrol.>", func(m *nats.Msg) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.msgs = append(w.msgs, append([]byte(nil), m.Data...))
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return w
}

// byType returns the raw bodies received so far by CloudEvents type.
func (w *wireDaemon) byType() map[string][][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string][][]byte{}
	for _, m := range w.msgs {
		var ev struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(m, &ev) == nil {
			out[ev.Type] = append(out[ev.Type], m)
		}
	}
	return out
}

// await waits until every type in want has been received.
func (w *wireDaemon) await(t *testing.T, want ...string) map[string][][]byte {
	t.Helper()
	var got map[string][][]byte
	testkit.EventuallyState(t, 10*time.Second, "every wanted event type is received", func() (bool, string) {
		got = w.byType()
		for _, typ := range want {
			if len(got[typ]) == 0 {
				return false, fmt.Sprintf("events seen by type: %v, want %v", keys(got), want)
			}
		}
		return true, ""
	})
	return got
}

// wireEvents runs one real patrol over examples/small-faults.json in a
// daemon with its embedded NATS server and returns the raw message bodies
// it published, by CloudEvents type (the first of each).
func wireEvents(t *testing.T) map[string][]byte {
	t.Helper()
	snap, err := filepath.Abs(filepath.Join("..", "examples", "small-faults.json"))
	if err != nil {
		t.Fatal(err)
	}
	w := startWireDaemon(t, snap)
	if _, err := w.d.RunNow(context.Background(), patrol.TriggerManual); err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for typ, msgs := range w.await(t, "patrold.finding.opened", "patrold.run.completed", "patrold.remediation.request") {
		out[typ] = msgs[0]
	}
	return out
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

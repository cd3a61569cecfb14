package docs

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/patrol"
)

// wireEvents runs one real patrol over examples/small-faults.json in a
// daemon with its embedded NATS server (autonomy assisted, so remediation
// requests go out too) and returns the raw message bodies it published,
// by CloudEvents type (the first of each).
func wireEvents(t *testing.T) map[string][]byte {
	t.Helper()
	dir := t.TempDir()
	snap, err := filepath.Abs(filepath.Join("..", "examples", "small-faults.json"))
	if err != nil {
		t.Fatal(err)
	}
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
	nc, err := nats.Connect(d.NATSURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	var mu sync.Mutex
	got := map[string][]byte{}
	_, err = nc.Subscribe("patrol.>", func(m *nats.Msg) {
		var ev struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(m.Data, &ev) != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if got[ev.Type] == nil {
			got[ev.Type] = append([]byte(nil), m.Data...)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	if _, err := d.RunNow(context.Background(), patrol.TriggerManual); err != nil {
		t.Fatal(err)
	}
	want := []string{"patrold.finding.opened", "patrold.run.completed", "patrold.remediation.request"}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := 0
		for _, w := range want {
			if got[w] != nil {
				n++
			}
		}
		mu.Unlock()
		if n == len(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("events seen by type: %v, want %v", keys(got), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	out := map[string][]byte{}
	for k, v := range got {
		out[k] = v
	}
	return out
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

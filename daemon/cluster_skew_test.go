package daemon_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/bus/embedded/natstest"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/internal/testkit"
)

// TestSkewedInstanceIsUnready: an instance whose clock is 5 min ahead
// of the NATS server's held the lease and never wrote (its own signed
// changes refused as stale). It now finds the skew when it takes the
// lease, lets go at once, never writes and is unready (clock_skew); an
// instance in step then becomes the writer.
func TestSkewedInstanceIsUnready(t *testing.T) {
	srv := natstest.Server(t)
	key := testkit.KeyFile(t)
	shared := t.TempDir()
	useSnapshot(t, shared, "faults.json")
	skewed := skewedNode(t, srv.ClientURL(), key, shared, "node-skewed", 5*time.Minute)
	defer skewed.Stop(context.Background())
	base := "http://" + skewed.HTTPAddr()
	testkit.EventuallyState(t, 15*time.Second, "the skewed instance is unready for its clock", func() (bool, string) {
		code, msg, _ := unreadyOf(t, base)
		return code == http.StatusServiceUnavailable && strings.Contains(msg,
			"clock_skew: this instance's clock is 5m0s ahead of the NATS server's (at most 1m0s either way): fix its time (NTP)"), msg
	})
	a, _, _ := clusterNode(t, srv.ClientURL(), key, shared, "node-a")
	defer a.Stop(context.Background())
	testkit.Eventually(t, 15*time.Second, "node-a writes", a.IsWriter)
	if skewed.IsWriter() {
		t.Fatal("the skewed instance writes")
	}
	code, msg, _ := unreadyOf(t, base)
	if code != http.StatusServiceUnavailable || !strings.Contains(msg, "clock_skew") {
		t.Fatalf("the skewed instance once another writes: %d %s", code, msg)
	}
}

// skewedNode is clusterNode with every clock of the daemon off by off.
func skewedNode(t *testing.T, url, key, shared, name string, off time.Duration) *daemon.Daemon {
	t.Helper()
	dir := t.TempDir()
	cfg, err := config.Load([]byte("data_dir: "+dir+"\nlog: {level: warn}\nhttp: {listen: '127.0.0.1:0'}\n"+
		"cluster: {secret_file: "+key+", instance: "+name+"}\nnats: {url: '"+url+"', lease: {ttl: 3s}}\n"+
		"schedule: {cron: '@every 1h', startup_delay: 1h}\n"+
		"source: {kind: file, file: {path: "+filepath.Join(shared, "snapshot.json")+"}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	d, err := daemon.New(daemon.Options{Config: cfg, Registerer: reg, Gatherer: reg, Stderr: io.Discard,
		Now: func() time.Time { return time.Now().Add(off) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return d
}

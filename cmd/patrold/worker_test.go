package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/patrold/patrold/internal/testkit"
)

// A worker needs a NATS server it does not start itself; without one the
// error names nats.url and nothing is created under data_dir.
func TestWorkerCommandNeedsNATS(t *testing.T) {
	c := newCLI(t, "nats: {embedded: {listen: '127.0.0.1:0'}}\n")
	out, code := c.run("worker")
	if code != 2 || !strings.Contains(out, "nats.url: required for patrold worker when nats.embedded.listen (\"127.0.0.1:0\") names no fixed port") {
		t.Fatalf("worker without nats.url: exit %d: %s", code, out)
	}
	keyless := newCLI(t, "nats: {url: 'nats://127.0.0.1:1'}\n")
	out, code = keyless.run("worker")
	if want := "deployment key: " + filepath.Join(keyless.dir, "var", "bus.key") + " does not exist: serve generates it in its data_dir on first start"; code != 2 || !strings.Contains(out, want) {
		t.Fatalf("worker without the deployment key: exit %d: %s", code, out)
	}
	down := newCLI(t, "nats: {url: 'nats://127.0.0.1:1'}\ncluster: {secret_file: "+testkit.KeyFile(t)+"}\n")
	out, code = down.run("worker")
	if code != 1 || !strings.Contains(out, "nats.url: connect to nats://127.0.0.1:1") {
		t.Fatalf("worker with NATS down: exit %d: %s", code, out)
	}
	// With the local serve's fixed port but no seed in data_dir (serve
	// never ran there), the error says where the credentials come from.
	seedless := newCLI(t, "nats: {embedded: {listen: '127.0.0.1:1'}}\ncluster: {secret_file: "+testkit.KeyFile(t)+"}\n")
	out, code = seedless.run("worker")
	if want := "nats.nkey_file: stat " + filepath.Join(seedless.dir, "var", "nats-worker.nk") + ": no such file or directory: " +
		"patrold serve generates the embedded server's credentials in its data_dir on first start"; code != 2 || !strings.Contains(out, want) {
		t.Fatalf("worker without its seed: exit %d: %s", code, out)
	}
	for _, c := range []*cli{c, keyless, down, seedless} {
		if _, err := os.Stat(filepath.Join(c.dir, "var")); !os.IsNotExist(err) {
			t.Fatalf("the worker created its data_dir: %v", err)
		}
	}
	if out, code := c.run("worker", "--bogus"); code != 2 || !strings.Contains(out, "unknown flag: --bogus") {
		t.Fatalf("unknown flag: exit %d: %s", code, out)
	}
}

// db seed is for cluster mode; elsewhere it is a usage error naming the
// missing section, and nothing is created.
func TestDBSeedNeedsACluster(t *testing.T) {
	c := newCLI(t, "")
	out, code := c.run("db", "seed")
	if code != 2 || !strings.Contains(out, "cluster: patrold db seed copies a database from another instance of a cluster; this configuration has no cluster section") {
		t.Fatalf("db seed without cluster: exit %d: %s", code, out)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "var", "patrold.db")); !os.IsNotExist(err) {
		t.Fatalf("db seed created a database: %v", err)
	}
}

package daemon_test

import (
	"context"
	"errors"
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/store"
)

// openRoot opens the store of cfg through a composition root.
func openRoot(t *testing.T, cfg *config.Config) (*daemon.Root, *store.Store) {
	t.Helper()
	root, err := daemon.NewRoot(cfg, daemon.RootOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := root.Store(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return root, st
}

var stoppedPart = regexp.MustCompile(`msg="part stopped" part="?([a-z ]+?)"? err=`)

func stoppedParts(log string) []string {
	var parts []string
	for _, m := range stoppedPart.FindAllStringSubmatch(log, -1) {
		parts = append(parts, m[1])
	}
	return parts
}

// TestHalfStartedDaemonStopsWhatItStarted: the API fails to start (its
// port is taken) after the store, NATS, the run context and the assistant
// worker were started. Start stops each of them, last started first, and
// closes the store. A later Stop does nothing more.
func TestHalfStartedDaemonStopsWhatItStarted(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := t.TempDir()
	cfg := testConfig(t, dir, "", "")
	cfg.HTTP.Listen = busy.Addr().String()
	cfg.Log.Level = "debug"
	cfg.Assistant.Enabled = true
	useSnapshot(t, dir, "healthy.json")
	var log testkit.LogBuffer
	reg := prometheus.NewRegistry()
	d, err := daemon.New(daemon.Options{Config: cfg, Registerer: reg, Gatherer: reg, Stderr: &log})
	if err != nil {
		t.Fatal(err)
	}
	err = d.Start(context.Background())
	if err == nil || !strings.HasPrefix(err.Error(), "http.listen: listen tcp "+busy.Addr().String()+":") {
		t.Fatalf("start on a taken port: %v", err)
	}
	want := []string{"assistant worker", "runs", "nats", "store"}
	if got := stoppedParts(log.String()); !slices.Equal(got, want) {
		t.Fatalf("parts stopped %v, want %v\n%s", got, want, log.String())
	}
	if err := d.Store().Ping(context.Background()); err == nil || !strings.Contains(err.Error(), "database is closed") {
		t.Fatalf("store after a failed start: %v", err)
	}
	if _, err := d.TriggerRun(context.Background()); !errors.Is(err, daemon.ErrStopping) {
		t.Fatalf("run after a failed start: %v", err)
	}
	if err := d.Stop(context.Background()); err != nil {
		t.Fatalf("stop after a failed start: %v", err)
	}
	if got := stoppedParts(log.String()); !slices.Equal(got, want) {
		t.Fatalf("a second stop stopped again: %v", got)
	}
}

// TestDaemonStopsPartsInReverseOrder: a started daemon stops every part
// it started, last started first, once.
func TestDaemonStopsPartsInReverseOrder(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, "", "")
	cfg.Log.Level = "debug"
	cfg.Assistant.Enabled = true
	useSnapshot(t, dir, "healthy.json")
	var log testkit.LogBuffer
	reg := prometheus.NewRegistry()
	d, err := daemon.New(daemon.Options{Config: cfg, Registerer: reg, Gatherer: reg, Stderr: &log})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := d.Stop(context.Background()); err != nil {
		t.Fatalf("second stop: %v", err)
	}
	want := []string{"scheduler", "api", "assistant worker", "runs", "nats", "store"}
	if got := stoppedParts(log.String()); !slices.Equal(got, want) {
		t.Fatalf("parts stopped %v, want %v", got, want)
	}
}

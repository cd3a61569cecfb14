package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/patrol"
)

// TestStandaloneWorker: the daemon runs no worker of its own. A
// standalone worker with no database (its data_dir never exists) takes
// the request, runs the action and verifies it. It keeps its session in
// the daemon's store over NATS and publishes fix_verified, which resolves
// the finding. A request published before the worker first connected
// waits for it.
func TestStandaloneWorker(t *testing.T) {
	dir, common := remediationFleet(t)
	common = "log: {level: info}\n" + common
	cfg, err := config.Load([]byte("data_dir: "+dir+"\nhttp: {listen: '127.0.0.1:0'}\nnats: {embedded: {listen: '127.0.0.1:0'}}\n"+
		"schedule: {cron: '@every 1h', startup_delay: 1h}\nassistant: {enabled: false}\n"+common), nil)
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, cfg)

	// The request is published before any worker exists.
	rep, err := d.RunNow(context.Background(), patrol.TriggerManual)
	if err != nil {
		t.Fatal(err)
	}
	id := findings.ID("storage/pve1/local-zfs", findings.CategoryCapacity, "high_disk")
	if !contains(rep.HandedOver, id) {
		t.Fatalf("not handed over: %v", rep.HandedOver)
	}
	testkit.Eventually(t, 10*time.Second, "the request is on the stream", func() bool {
		n, err := d.Store().PendingCount(context.Background())
		return err == nil && n == 0
	})

	workerDir := filepath.Join(t.TempDir(), "never-created")
	// The worker reads the daemon's generated key and its generated
	// worker nkey.
	wcfg, err := config.Load([]byte("data_dir: "+workerDir+"\nnats: {url: '"+d.NATSURL()+"', nkey_file: "+
		daemon.NATSSeedFile(dir, embedded.RoleWorker)+"}\n"+
		"cluster: {secret_file: "+filepath.Join(dir, daemon.KeyFile)+"}\n"+common), nil)
	if err != nil {
		t.Fatal(err)
	}
	logs := &testkit.LogBuffer{}
	root, err := daemon.NewRoot(wcfg, daemon.RootOptions{Stderr: logs})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- root.Worker(ctx, "127.0.0.1:0", func(addr string) { ready <- addr }) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("worker exited before ready: %v\n%s", err, logs)
	case <-time.After(20 * time.Second):
		t.Fatalf("worker not ready\n%s", logs)
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
		if err := root.Close(); err != nil {
			t.Errorf("worker close: %v", err)
		}
	}()
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("worker %s: %d", path, resp.StatusCode)
		}
	}

	testkit.Eventually(t, 30*time.Second, "the worker's outcome resolves the finding", func() bool {
		f, err := d.Store().Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return f.LastOutcome == findings.OutcomeFixVerified
	})
	f, err := d.Store().Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if f.Status != findings.StatusResolved || f.ResolveReason != findings.ResolveFixVerified {
		t.Fatalf("verified but not resolved: %+v", f)
	}
	// The session lives in the daemon's database, transcript and all.
	recs, err := d.Store().Investigations(context.Background(), id)
	if err != nil || len(recs) != 1 {
		t.Fatalf("investigations %+v, %v", recs, err)
	}
	sess, err := d.Store().Session(context.Background(), recs[0].SessionID)
	if err != nil {
		t.Fatal(err)
	}
	var tr assistant.Transcript
	if err := json.Unmarshal([]byte(sess.Transcript), &tr); err != nil {
		t.Fatal(err)
	}
	if sess.Outcome != "fix_verified" || tr.Outcome != "fix_verified" || tr.SessionID != sess.ID || len(tr.Steps) == 0 {
		t.Fatalf("stored session %+v, transcript %+v", sess, tr)
	}
	if _, err := os.Stat(workerDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the worker touched its data_dir: %v", err)
	}
	if !strings.Contains(logs.String(), "worker ready") || strings.Contains(logs.String(), "unknown finding") {
		t.Fatalf("worker log:\n%s", logs)
	}
}

func contains(ss []string, s string) bool {
	for _, v := range ss {
		if v == s {
			return true
		}
	}
	return false
}

package cluster_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/patrold/patrold/bus/embedded/natstest"
	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
)

// switchLease is a lease the test gives and takes away.
type switchLease struct {
	leader atomic.Bool
	term   atomic.Uint64
}

// heldLease is a lease held at term 5 and the leadership it gives.
func heldLease() (*switchLease, *cluster.Leadership) {
	l := &switchLease{}
	l.term.Store(5)
	l.leader.Store(true)
	return l, cluster.NewLeadership(true, time.Now)
}

func (l *switchLease) IsLeader() bool { return l.leader.Load() }
func (l *switchLease) Term() uint64 {
	if l.leader.Load() {
		return l.term.Load()
	}
	return 0
}
func (l *switchLease) Close() error { l.leader.Store(false); return nil }

// TestDeposedWritersLastCommitIsCaptured: the writer loses its lease
// while it serves a mutation, which commits just after (the partition
// test found audit rows committed once capture was off: on one instance
// only, never on the stream, no divergence recorded). Capture goes off
// only once the request is done, so its change reaches the stream.
func TestDeposedWritersLastCommitIsCaptured(t *testing.T) {
	ctx := context.Background()
	a := newNodes(t, "a")[0]
	lease := &switchLease{}
	lease.term.Store(5)
	lead := cluster.NewLeadership(true, time.Now)
	logs := &testkit.LogBuffer{}
	m, err := cluster.New(cluster.Options{Bus: a.b, Lease: lease, Leadership: lead, Store: a.st, Instance: "a", DataDir: t.TempDir(),
		Replicas: 1, Kick: a.rel.Kick, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	run(t, a.rel.Run)
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Stop(context.Background()) })

	entered, release := make(chan struct{}), make(chan struct{})
	silID := make(chan string, 1)
	h := m.Forwarding(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(entered)
		<-release
		now := time.Now()
		s, err := a.st.AddSilence(context.Background(), findings.Silence{Matchers: findings.Matchers{Resource: "vm-1"}, Comment: "late",
			Author: "op", StartsAt: now, EndsAt: now.Add(time.Hour)}, now)
		if err != nil {
			t.Error(err)
		}
		silID <- s.ID
		w.WriteHeader(http.StatusOK)
	}))
	lease.leader.Store(true)
	testkit.Eventually(t, 10*time.Second, "a writes", lead.IsWriter)

	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/api/v1/silences", strings.NewReader("{}")))
	}()
	<-entered
	lease.leader.Store(false) // the lease is lost mid-request
	testkit.Eventually(t, 5*time.Second, "a stops writing", func() bool { return !lead.IsWriter() })
	// Stepping down now waits for the request; were it not to, it would
	// say so well within a few polls of the lease.
	deadline := time.Now().Add(10 * cluster.LeaderPoll)
	for time.Now().Before(deadline) && !strings.Contains(logs.String(), "standby: leader lease lost") {
		time.Sleep(cluster.LeaderPoll / 4)
	}
	close(release)
	<-done
	id := <-silID
	testkit.Eventually(t, 10*time.Second, "the late silence is on the stream", func() bool {
		for _, msg := range natstest.Messages(t, a.b.ClientURL()) {
			if bytes.Contains(msg.Data, []byte(id)) {
				return true
			}
		}
		return false
	})
}

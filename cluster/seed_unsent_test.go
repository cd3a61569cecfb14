package cluster_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/internal/testkit"
)

// TestDeposedWriterServesNoSeed: the partition test ended with a row on
// two instances and not the third. A writer cut off at the end of its
// lease committed a change its relay could not publish; once deposed,
// it served a seed copy holding that row, and the copy's taker kept it
// after the row itself was fenced. An instance that does not write and
// holds state changes of its own that are not on the stream refuses to
// serve a copy: a copy holds what the stream holds.
func TestDeposedWriterServesNoSeed(t *testing.T) {
	ctx := context.Background()
	nodes := newNodes(t, "a", "b")
	a, b := nodes[0], nodes[1]
	lease, lead := heldLease()
	startMember(t, cluster.Options{Bus: a.b, Lease: lease, Leadership: lead, Store: a.st, Instance: "a",
		DataDir: t.TempDir(), Replicas: 1, Kick: a.rel.Kick})
	rctx, stopRelay := context.WithCancel(ctx)
	relayDone := make(chan struct{})
	go func() { defer close(relayDone); _ = a.rel.Run(rctx) }()
	testkit.Eventually(t, 10*time.Second, "a is the writer", lead.IsWriter)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	commitRun(t, a.st, now, obs("vm-1", "cpu"))
	a.rel.Kick()
	testkit.Eventually(t, 10*time.Second, "a's first run on the stream", func() bool {
		n, err := a.st.UnsentState(ctx)
		return err == nil && n == 0
	})

	// The relay stops (the writer is cut off), a change is committed,
	// then the lease is gone.
	stopRelay()
	<-relayDone
	commitRun(t, a.st, now.Add(time.Hour), obs("vm-1", "cpu"), obs("vm-2", "disk"))
	if n, err := a.st.UnsentState(ctx); err != nil || n == 0 {
		t.Fatalf("unsent state changes: %d, %v; want some", n, err)
	}
	lease.leader.Store(false)
	testkit.Eventually(t, 10*time.Second, "a stopped writing", func() bool { return !lead.IsWriter() })

	var err error
	testkit.EventuallyState(t, 20*time.Second, "a answers seed requests", func() (bool, string) {
		_, err = cluster.FetchSeed(ctx, b.b.Conn(), b.b.JetStream(), b.b.Guard(), b.b.Prefix(), filepath.Join(t.TempDir(), "patrold.db"))
		return err != nil && strings.Contains(err.Error(), "refused"), errString(err)
	})
	if !strings.Contains(err.Error(), "seed: a refused: ") || !strings.Contains(err.Error(), "not on the stream yet") {
		t.Fatalf("FetchSeed = %v, want a's refusal naming its unsent changes", err)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

package bus

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/patrold/patrold/internal/testkit"
)

// changeLog records OnChange calls.
type changeLog struct {
	mu  sync.Mutex
	got []bool
}

func (c *changeLog) add(leader bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, leader)
}

func (c *changeLog) list() []bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.got)
}

// A lease announces acquiring and releasing, and a second Lease with the
// same holder (a restarted process) reclaims a key left behind at once
// rather than after the TTL.
func TestLeaseAnnouncesChangesAndReclaimsOwnKey(t *testing.T) {
	srv := startServer(t)
	_, js := connect(t, srv.url())
	const ttl = 10 * time.Second // far longer than the test may wait
	var first changeLog
	l1, err := NewLease(js, LeaseOptions{Key: "scheduler", Holder: "node-a", TTL: ttl, Logger: testLogger(t), OnChange: first.add})
	if err != nil {
		t.Fatal(err)
	}
	ctx1, cancel1 := context.WithCancel(context.Background())
	done1 := make(chan struct{})
	go func() { defer close(done1); _ = l1.Run(ctx1) }()
	testkit.Eventually(t, 3*time.Second, "node-a leads", l1.IsLeader)
	// "kill -9": stop renewing without releasing the key.
	cancel1()
	<-done1
	if got := first.list(); !slices.Equal(got, []bool{true}) {
		t.Fatalf("first lease announced %v, want [true]", got)
	}

	var second changeLog
	l2, err := NewLease(js, LeaseOptions{Key: "scheduler", Holder: "node-a", TTL: ttl, Logger: testLogger(t), OnChange: second.add})
	if err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	go func() { _ = l2.Run(ctx2) }()
	start := time.Now()
	testkit.Eventually(t, 3*time.Second, "restarted node-a reclaims its key", l2.IsLeader)
	if took := time.Since(start); took >= ttl/2 {
		t.Fatalf("reclaim took %s, not at once", took)
	}

	// Another holder does not take the key while it is held.
	other, err := NewLease(js, LeaseOptions{Key: "scheduler", Holder: "node-b", TTL: ttl, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx3, cancel3 := context.WithCancel(context.Background())
	defer cancel3()
	go func() { _ = other.Run(ctx3) }()

	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	if got := second.list(); !slices.Equal(got, []bool{true, false}) {
		t.Fatalf("second lease announced %v, want [true false]", got)
	}
	testkit.Eventually(t, 3*time.Second, "node-b takes the released key", other.IsLeader)
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
}

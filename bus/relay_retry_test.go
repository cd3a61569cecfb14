package bus

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/internal/testkit"
)

// downStub fails every publish while down, and acknowledges them after.
type downStub struct {
	down  atomic.Bool
	tries atomic.Int64
}

type ackedFuture struct {
	m   *nats.Msg
	ok  chan *jetstream.PubAck
	err chan error
}

func (f ackedFuture) Ok() <-chan *jetstream.PubAck { return f.ok }
func (f ackedFuture) Err() <-chan error            { return f.err }
func (f ackedFuture) Msg() *nats.Msg               { return f.m }

func (s *downStub) PublishMsgAsync(m *nats.Msg, _ ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	s.tries.Add(1)
	if s.down.Load() {
		return nil, errors.New("no responders")
	}
	f := ackedFuture{m: m, ok: make(chan *jetstream.PubAck, 1), err: make(chan error, 1)}
	f.ok <- &jetstream.PubAck{}
	return f, nil
}

// TestRelayRetryEndsTheBackoff: a relay backing off after failed
// publishes publishes at once when Retry is called (a replica found one
// of its changes missing from the stream), not at the end of a backoff
// that has grown to seconds.
func TestRelayRetryEndsTheBackoff(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ob := openOutbox(t, filepath.Join(t.TempDir(), "outbox.db"))
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	if err := ob.Insert(ctx, mixedRows(t, now)[:1]); err != nil {
		t.Fatal(err)
	}
	pub := &downStub{}
	pub.down.Store(true)
	r, err := NewRelay(RelayOptions{Outbox: ob, JetStream: pub, Prefix: "patrol", Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	// 250 ms, 500 ms, 1 s, 2 s: the next wait is 4 s.
	testkit.Eventually(t, 10*time.Second, "four failed attempts", func() bool { return pub.tries.Load() >= 5 })
	pub.down.Store(false)
	start := time.Now()
	r.Retry()
	testkit.Eventually(t, 10*time.Second, "the row published", func() bool { return ob.count(t, "sent_at IS NULL") == 0 })
	if took := time.Since(start); took > time.Second {
		t.Fatalf("published %s after Retry, want at once", took)
	}
}

package bus

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// assertStreamHasExactly checks the stream holds each of n events
// (indices 0..n-1) exactly once, in index order.
func assertStreamHasExactly(t *testing.T, js jetstream.JetStream, n int) {
	t.Helper()
	assertStreamHolds(t, js, n, true)
}

// assertStreamHolds checks the stream holds each of n events (indices
// 0..n-1) exactly once, and in index order when ordered is set.
func assertStreamHolds(t *testing.T, js jetstream.JetStream, n int, ordered bool) {
	t.Helper()
	events := streamEvents(t, js, testPrefix+".findings.>")
	count := map[string]int{}
	for i, ev := range events {
		count[ev.ID]++
		if count[ev.ID] > 1 {
			t.Errorf("event %s stored twice (stream position %d)", ev.ID, i)
		}
		if idx := eventIndex(t, ev); ordered && idx != i && count[ev.ID] == 1 {
			t.Errorf("stream position %d holds index %d: reordered or lost", i, idx)
		}
	}
	if len(count) != n || len(events) != n {
		t.Fatalf("stream holds %d messages, %d distinct ids; want %d of each", len(events), len(count), n)
	}
	for i := range n {
		if id := fmt.Sprintf("ev-%06d", i); count[id] != 1 {
			t.Errorf("event %s stored %d times, want once", id, count[id])
		}
	}
}

// The server is shut down while a writer keeps committing and the relay keeps
// publishing; after a restart on the same store dir and port everything
// pending arrives, none twice, none out of order.
func TestRelayDeliversAcrossServerRestart(t *testing.T) {
	// Unbuffered, as patrold's own client: publishes fail at once while
	// down, so nothing later overtakes a lost one and order holds.
	t.Run("unbuffered", func(t *testing.T) { testRelayAcrossRestart(t, true, nats.ReconnectBufSize(-1)) })
	// Buffered: the client queues publishes while disconnected and replays
	// them on reconnect, ahead of the relay's retry of rows lost on the
	// dead connection. Nothing is lost or stored twice, but order is not
	// promised (docs/CLUSTER.md, "The writer's NATS server dies").
	t.Run("buffered", func(t *testing.T) { testRelayAcrossRestart(t, false) })
}

func testRelayAcrossRestart(t *testing.T, ordered bool, copts ...nats.Option) {
	srv := startServer(t)
	_, js := connect(t, srv.url(), copts...)
	ensureStream(t, js)
	ob := openOutbox(t, filepath.Join(t.TempDir(), "outbox.db"))
	// An ack timeout shorter than the outage: publishes fail, back off and
	// are retried, and the client's reconnect buffer replays the earlier
	// attempts, so the stream sees every id several times.
	relay, err := NewRelay(RelayOptions{Outbox: ob, JetStream: js, Prefix: testPrefix, Batch: 50,
		Interval: 20 * time.Millisecond, AckTimeout: 250 * time.Millisecond, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = relay.Run(ctx) }()

	const total, perCommit = 1200, 20
	writerDone := make(chan error, 1)
	go func() {
		now := time.Now()
		for i := 0; i < total; i += perCommit {
			if err := ob.Insert(ctx, findingRows(t, "ev", i, perCommit, now)); err != nil {
				writerDone <- err
				return
			}
			relay.Kick()
			time.Sleep(15 * time.Millisecond)
		}
		writerDone <- nil
	}()

	testkit.Eventually(t, 10*time.Second, "some events sent", func() bool { return ob.count(t, "sent_at IS NOT NULL") >= 200 })
	srv.shutdown()
	time.Sleep(time.Second) // the writer keeps committing while NATS is gone
	pendingWhileDown := ob.count(t, "sent_at IS NULL")
	srv.restart()
	if err := <-writerDone; err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "outbox drained after restart", func() bool { return ob.count(t, "sent_at IS NULL") == 0 })
	cancel()
	wg.Wait()
	if pendingWhileDown == 0 {
		t.Fatal("no events were pending while the server was down; the test proved nothing")
	}
	assertStreamHolds(t, js, total, ordered)
	if testutil.ToFloat64(relay.m.failures) == 0 {
		t.Fatal("no publish failed during the outage; the test proved nothing")
	}
}

// The relay publishes and gets its acks but dies before MarkSent. A fresh
// relay republishes the same rows; JetStream drops them by Nats-Msg-Id, even
// across a server restart in between.
func TestRelayAckedButNotMarkedIsDeduplicated(t *testing.T) {
	srv := startServer(t)
	_, js := connect(t, srv.url())
	ensureStream(t, js)
	ctx := context.Background()
	ob := openOutbox(t, filepath.Join(t.TempDir(), "outbox.db"))
	if err := ob.Insert(ctx, findingRows(t, "ev", 0, 300, time.Now())); err != nil {
		t.Fatal(err)
	}
	crashing := &failingMarkSent{sqliteOutbox: ob, armed: true}
	r1 := newTestRelay(t, crashing, js)
	if err := r1.Flush(ctx); !errors.Is(err, errCrash) {
		t.Fatalf("Flush error %v, want the simulated crash", err)
	}
	if n := ob.count(t, "sent_at IS NULL"); n != 300 {
		t.Fatalf("%d rows pending after the crash, want all 300", n)
	}
	// The first window (DefaultOutboxBatch rows) reached the stream, and
	// the second (the other 44), in flight while the first was marked:
	// its last messages may still be on their way when Flush returns.
	testkit.Eventually(t, 10*time.Second, "both windows' 300 events in the stream after the crash", func() bool {
		return len(streamEvents(t, js, testPrefix+".>")) == 300
	})

	reconnects := js.Conn().Stats().Reconnects
	srv.restart()
	// Connected again after a reconnect: right after the restart the client
	// may not have noticed the old connection is gone yet.
	testkit.Eventually(t, 10*time.Second, "client reconnected", func() bool {
		return js.Conn().Stats().Reconnects > reconnects && js.Conn().IsConnected()
	})
	r2 := newTestRelay(t, ob, js)
	if err := r2.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := ob.count(t, "sent_at IS NULL"); n != 0 {
		t.Fatalf("%d rows still pending", n)
	}
	assertStreamHasExactly(t, js, 300)
}

// Rows committed while no relay runs (a crash between commit and publish)
// are published by a fresh relay opened on the same SQLite file.
func TestRelayPublishesRowsCommittedBeforeACrash(t *testing.T) {
	srv := startServer(t)
	_, js := connect(t, srv.url())
	ensureStream(t, js)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "outbox.db")
	before := openOutbox(t, path)
	if err := before.Insert(ctx, findingRows(t, "ev", 0, 150, time.Now())); err != nil {
		t.Fatal(err)
	}
	if err := before.db.Close(); err != nil { // the process dies here
		t.Fatal(err)
	}
	after := openOutbox(t, path)
	relay := newTestRelay(t, after, js)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = relay.Run(runCtx) }()
	testkit.Eventually(t, 10*time.Second, "rows published", func() bool { return after.count(t, "sent_at IS NULL") == 0 })
	cancel()
	<-done
	assertStreamHasExactly(t, js, 150)
}

// failOnce publishes through the real JetStream but fails the first attempt
// of one message id, as a server rejecting one message mid-window would.
type failOnce struct {
	Publisher
	id     string
	failed bool
}

func (f *failOnce) PublishMsgAsync(m *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	if !f.failed && m.Header.Get(jetstream.MsgIDHeader) == f.id {
		f.failed = true
		return failedFuture{m}, nil
	}
	return f.Publisher.PublishMsgAsync(m, opts...)
}

type failedFuture struct{ m *nats.Msg }

func (failedFuture) Ok() <-chan *jetstream.PubAck { return nil }
func (failedFuture) Err() <-chan error {
	ch := make(chan error, 1)
	ch <- errors.New("rejected")
	return ch
}
func (f failedFuture) Msg() *nats.Msg { return f.m }

// A failure mid-window marks only the rows before it; the retry republishes
// from the failed row and the already stored later rows are dropped as
// duplicates. In windows of 5 the failure is in the second window while
// the third is in flight: that one is not marked either.
func TestRelayMarksOnlyTheAckedPrefix(t *testing.T) {
	for _, batch := range []int{0, 5} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) { testRelayMarksOnlyTheAckedPrefix(t, batch) })
	}
}

func testRelayMarksOnlyTheAckedPrefix(t *testing.T, batch int) {
	srv := startServer(t)
	_, js := connect(t, srv.url())
	ensureStream(t, js)
	ctx := context.Background()
	ob := openOutbox(t, filepath.Join(t.TempDir(), "outbox.db"))
	if err := ob.Insert(ctx, findingRows(t, "ev", 0, 20, time.Now())); err != nil {
		t.Fatal(err)
	}
	relay := newTestRelay(t, ob, js)
	if batch > 0 {
		relay.opts.Batch = batch
	}
	relay.opts.JetStream = &failOnce{Publisher: js, id: "ev-000007"}
	if err := relay.Flush(ctx); err == nil || !strings.Contains(err.Error(), "ev-000007") {
		t.Fatalf("Flush error %v, want the failure of ev-000007", err)
	}
	if n := ob.count(t, "sent_at IS NOT NULL"); n != 7 {
		t.Fatalf("%d rows marked sent, want the 7 before the failure", n)
	}
	if n := ob.count(t, "sent_at IS NOT NULL AND id >= 'ev-000007'"); n != 0 {
		t.Fatalf("%d rows at or after the failure marked sent", n)
	}
	if err := relay.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	ids := map[string]int{}
	for _, ev := range streamEvents(t, js, testPrefix+".>") {
		ids[ev.ID]++
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("%s stored %d times", id, n)
		}
	}
	if len(ids) != 20 {
		t.Fatalf("%d distinct events stored, want 20", len(ids))
	}
}

package bus

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/findings"
)

const benchEvents = 10_000

// benchRows are the 10k finding events both benchmarks publish; the id
// gets a per-iteration tag so JetStream does not drop them as duplicates.
func benchRows(b *testing.B, iter int) []findings.OutboxEvent {
	return findingRows(b, fmt.Sprintf("b%d", iter), 0, benchEvents, time.Now())
}

// BenchmarkOutboxPublish10k is the full outbox path: commit 10k rows to the
// SQLite outbox (one transaction), then Flush: read windows in Seq order,
// publish asynchronously with Nats-Msg-Id, wait for the acks, mark each
// window sent in one UPDATE.
func BenchmarkOutboxPublish10k(b *testing.B) {
	for _, batch := range []int{DefaultOutboxBatch, 1000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			srv := startServer(b)
			_, js := connect(b, srv.url())
			ensureStream(b, js)
			ob := openOutbox(b, filepath.Join(b.TempDir(), "outbox.db"))
			relay, err := NewRelay(RelayOptions{Outbox: ob, JetStream: js, Prefix: testPrefix, Batch: batch})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			var elapsed time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				rows := benchRows(b, i)
				b.StartTimer()
				start := time.Now()
				if err := ob.Insert(ctx, rows); err != nil {
					b.Fatal(err)
				}
				if err := relay.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				elapsed += time.Since(start)
			}
			b.StopTimer()
			if n := ob.count(b, "sent_at IS NULL"); n != 0 {
				b.Fatalf("%d rows left unsent", n)
			}
			b.ReportMetric(float64(benchEvents*b.N)/elapsed.Seconds(), "events/s")
		})
	}
}

// BenchmarkBareJetStreamAsync10k publishes the same 10k envelopes straight
// to JetStream with PublishMsgAsync and waits for every ack: the ceiling
// the outbox path is measured against.
func BenchmarkBareJetStreamAsync10k(b *testing.B) {
	srv := startServer(b)
	_, js := connect(b, srv.url())
	ensureStream(b, js)
	var elapsed time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		rows := benchRows(b, i)
		msgs := make([]*nats.Msg, len(rows))
		for j, row := range rows {
			m, err := EventMessage(testPrefix, "patrold/bench", row)
			if err != nil {
				b.Fatal(err)
			}
			msgs[j] = m
		}
		b.StartTimer()
		start := time.Now()
		futures := make([]jetstream.PubAckFuture, 0, len(msgs))
		for _, m := range msgs {
			f, err := js.PublishMsgAsync(m)
			if err != nil {
				b.Fatal(err)
			}
			futures = append(futures, f)
		}
		select {
		case <-js.PublishAsyncComplete():
		case <-time.After(30 * time.Second):
			b.Fatal("acks did not arrive")
		}
		for _, f := range futures {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				b.Fatal(err)
			}
		}
		elapsed += time.Since(start)
	}
	b.StopTimer()
	b.ReportMetric(float64(benchEvents*b.N)/elapsed.Seconds(), "events/s")
}

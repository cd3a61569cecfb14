package bus

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/store"
	"github.com/patrold/patrold/store/storetest"
)

const benchEvents = 10_000

// benchRows are the 10k finding events both benchmarks publish
// (storetest.FindingEvents: about 1 KB each, ids tagged by iter).
func benchRows(b *testing.B, iter int) []contracts.OutboxEvent {
	return storetest.FindingEvents(b, iter, benchEvents)
}

func eventBytes(rows []contracts.OutboxEvent) float64 {
	n := 0
	for _, r := range rows {
		n += len(r.Data)
	}
	return float64(n) / float64(len(rows))
}

// BenchmarkOutboxPublish10k is the full outbox path with the findings store
// itself. It writes 10k rows to the store's outbox table in one
// transaction, then flushes:
//   - read windows in Seq order (the rows this store just wrote come from its
//     memory, checked against the window's seqs and ids);
//   - build each message and publish it asynchronously with Nats-Msg-Id, the
//     next window in flight while the acks of the previous arrive;
//   - mark each window sent (one small row).
//
// sent=N first fills the table with N ~1 KB rows already sent. They must
// not slow the relay: its reads search the primary key above the sent
// mark. The enqueue-ms figure is the store's share. The cpu-ms figure is
// the CPU time of the whole process (client, store and embedded server),
// which other work on the machine does not stretch.
func BenchmarkOutboxPublish10k(b *testing.B) {
	for _, c := range []struct{ batch, sent int }{{DefaultOutboxBatch, 0}, {1000, 0}, {DefaultOutboxBatch, 100_000}} {
		b.Run(fmt.Sprintf("batch=%d/sent=%d", c.batch, c.sent), func(b *testing.B) {
			ctx := context.Background()
			st, relay := outboxSetup(b, c.batch, c.sent)
			var elapsed, enqueue, cpu time.Duration
			var size float64
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				rows := benchRows(b, i)
				size = eventBytes(rows)
				b.StartTimer()
				cpu0 := processCPU(b)
				e, all := outboxPass(b, st, relay, rows)
				enqueue, elapsed = enqueue+e, elapsed+all
				cpu += processCPU(b) - cpu0
			}
			b.StopTimer()
			if n, err := st.PendingCount(ctx); err != nil || n != 0 {
				b.Fatalf("%d rows left unsent (%v)", n, err)
			}
			b.ReportMetric(float64(benchEvents*b.N)/elapsed.Seconds(), "events/s")
			b.ReportMetric(float64(enqueue.Microseconds())/1e3/float64(b.N), "enqueue-ms/op")
			b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/op")
			b.ReportMetric(size, "B/event")
		})
	}
}

// outboxSetup starts a server and opens the findings store (with sent
// rows already sent) and its relay.
func outboxSetup(b *testing.B, batch, sent int) (*store.Store, *Relay) {
	srv := startServer(b)
	_, js := connect(b, srv.url())
	ensureStream(b, js)
	st, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "patrold.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	if sent > 0 {
		fillSent(b, st, sent)
	}
	relay, err := NewRelay(RelayOptions{Outbox: st, JetStream: js, Prefix: testPrefix, Batch: batch})
	if err != nil {
		b.Fatal(err)
	}
	return st, relay
}

// outboxPass enqueues rows and flushes them, and returns how long the
// enqueue and the whole pass took.
func outboxPass(b *testing.B, st *store.Store, relay *Relay, rows []contracts.OutboxEvent) (enqueue, all time.Duration) {
	ctx := context.Background()
	start := time.Now()
	if err := st.Enqueue(ctx, rows...); err != nil {
		b.Fatal(err)
	}
	enqueue = time.Since(start)
	if err := relay.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	return enqueue, time.Since(start)
}

// fillSent writes n ~1 KB finding events, as the benchmark does, and marks
// them sent through the store: a week of retention's worth of sent rows.
func fillSent(b *testing.B, st *store.Store, n int) {
	b.Helper()
	ctx := context.Background()
	for i := 0; i*benchEvents < n; i++ {
		rows := benchRows(b, -1-i)
		if err := st.Enqueue(ctx, rows[:min(benchEvents, n-i*benchEvents)]...); err != nil {
			b.Fatal(err)
		}
	}
	storetest.MarkAllSent(b, st, maxBatch)
}

// BenchmarkBareJetStreamAsync10k publishes the same 10k events straight
// to JetStream with PublishMsgAsync and waits for every ack: the ceiling
// the outbox path is measured against. Building the messages is timed, as
// it is on the outbox side.
func BenchmarkBareJetStreamAsync10k(b *testing.B) {
	srv := startServer(b)
	_, js := connect(b, srv.url())
	ensureStream(b, js)
	var elapsed, cpu time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		rows := benchRows(b, i)
		b.StartTimer()
		cpu0 := processCPU(b)
		elapsed += barePass(b, js, rows)
		cpu += processCPU(b) - cpu0
	}
	b.StopTimer()
	b.ReportMetric(float64(benchEvents*b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/op")
}

// barePass builds and publishes rows straight to JetStream and waits for
// every ack; it returns how long that took.
func barePass(b *testing.B, js jetstream.JetStream, rows []contracts.OutboxEvent) time.Duration {
	start := time.Now()
	futures := make([]jetstream.PubAckFuture, 0, len(rows))
	for _, row := range rows {
		m, err := EventMessage(testPrefix, "patrold/bench", row)
		if err != nil {
			b.Fatal(err)
		}
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
	return time.Since(start)
}

// BenchmarkOutboxVsBare10k runs the two side by side, one pass of each in
// every iteration (the same 10k events, under ids of their own). So load
// from other work on the machine falls on both alike. outbox-ms and bare-ms
// are their times per pass, x-bare the ratio of their sums.
func BenchmarkOutboxVsBare10k(b *testing.B) {
	for _, batch := range []int{DefaultOutboxBatch, 1000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			st, relay := outboxSetup(b, batch, 0)
			srv := startServer(b)
			_, js := connect(b, srv.url())
			ensureStream(b, js)
			var outbox, bare time.Duration
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				rows := benchRows(b, 2*i)
				again := benchRows(b, 2*i+1)
				b.StartTimer()
				// Alternate which goes first.
				if i%2 == 0 {
					_, all := outboxPass(b, st, relay, rows)
					outbox, bare = outbox+all, bare+barePass(b, js, again)
				} else {
					bare += barePass(b, js, again)
					_, all := outboxPass(b, st, relay, rows)
					outbox += all
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(outbox.Microseconds())/1e3/float64(b.N), "outbox-ms/op")
			b.ReportMetric(float64(bare.Microseconds())/1e3/float64(b.N), "bare-ms/op")
			b.ReportMetric(outbox.Seconds()/bare.Seconds(), "x-bare")
		})
	}
}

// processCPU is the CPU time (user and system) the whole process used so
// far: the benchmark, the client and the embedded server. Other work on a
// shared machine stretches wall time but not this.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

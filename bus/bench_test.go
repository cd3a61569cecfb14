package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store"
)

const benchEvents = 10_000

// benchRows are the 10k finding events both benchmarks publish: real
// finding event data (a whole finding, as CommitRun writes it, about 1 KB
// each); the id gets a per-iteration tag so JetStream does not drop them as
// duplicates.
func benchRows(b *testing.B, iter int) []contracts.OutboxEvent {
	b.Helper()
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	rows := make([]contracts.OutboxEvent, 0, benchEvents)
	for i := range benchEvents {
		sev := findings.Severity(contracts.Severities[i%len(contracts.Severities)])
		ch := findings.Observe(nil, findings.Observation{
			Key: "high_cpu", ResourceID: fmt.Sprintf("vm/%d", 1000+i), ResourceKind: "vm", ResourceName: fmt.Sprintf("app-%d", i),
			ResourceTags: []string{"prod", "web"}, Category: findings.CategoryPerformance, Severity: sev, Source: findings.SourceDeterministic,
			Title:          fmt.Sprintf("High CPU on app-%d", i),
			Description:    "cpu_percent_avg 97.2 over 900 s is above the critical threshold 95 (warning 85); the guest has been saturated for the whole window, and its run queue stayed above the vCPU count, so requests wait for a core.",
			Recommendation: "Find the processes or guests using the CPU; consider moving load or adding capacity.",
			Evidence:       "cpu_percent=97.2 cpu_percent_avg=97.2 threshold=95 window_seconds=900",
		}, now, "01JDQ5N3K5Z8J7Q6W2V1M0X9YA")
		subject, typ := findings.FindingSubject(findings.EventOpened, ch.Finding.Severity)
		data, err := json.Marshal(findings.NewFindingEventData(&ch.Finding, "first", "01JDQ5N3K5Z8J7Q6W2V1M0X9YA", now))
		if err != nil {
			b.Fatal(err)
		}
		rows = append(rows, contracts.OutboxEvent{
			ID: fmt.Sprintf("b%d-%06d", iter, i), Subject: subject, Type: typ, ResourceID: ch.Finding.ResourceID,
			Time: now.Add(time.Duration(i) * time.Millisecond), Data: data,
		})
	}
	return rows
}

func eventBytes(rows []contracts.OutboxEvent) float64 {
	n := 0
	for _, r := range rows {
		n += len(r.Data)
	}
	return float64(n) / float64(len(rows))
}

// BenchmarkOutboxPublish10k is the full outbox path with the findings
// store itself: write 10k rows to its outbox table (one transaction), then
// Flush: read windows in Seq order (the rows this store just wrote come
// from its memory, checked against the window's seqs and ids), build each
// message, publish asynchronously with Nats-Msg-Id with the next window in
// flight while the acks of the previous arrive, mark each window sent (one
// small row). sent=N first fills the table with N ~1 KB rows already sent:
// they must not slow the relay (its reads search the primary key above the
// sent mark). enqueue-ms is the store's share; cpu-ms is the CPU time of
// the whole process (client, store and embedded server), which other work
// on the machine does not stretch.
func BenchmarkOutboxPublish10k(b *testing.B) {
	for _, c := range []struct{ batch, sent int }{{DefaultOutboxBatch, 0}, {1000, 0}, {DefaultOutboxBatch, 100_000}} {
		b.Run(fmt.Sprintf("batch=%d/sent=%d", c.batch, c.sent), func(b *testing.B) {
			srv := startServer(b)
			_, js := connect(b, srv.url())
			ensureStream(b, js)
			ctx := context.Background()
			st, err := store.Open(ctx, filepath.Join(b.TempDir(), "patrold.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			if c.sent > 0 {
				fillSent(b, st, c.sent)
			}
			relay, err := NewRelay(RelayOptions{Outbox: st, JetStream: js, Prefix: testPrefix, Batch: c.batch})
			if err != nil {
				b.Fatal(err)
			}
			var elapsed, enqueue, cpu time.Duration
			var size float64
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				rows := benchRows(b, i)
				size = eventBytes(rows)
				b.StartTimer()
				start, cpu0 := time.Now(), processCPU(b)
				if err := st.Enqueue(ctx, rows...); err != nil {
					b.Fatal(err)
				}
				enqueue += time.Since(start)
				if err := relay.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				elapsed += time.Since(start)
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
	for {
		rows, err := st.PendingEvents(ctx, maxBatch)
		if err != nil {
			b.Fatal(err)
		}
		if len(rows) == 0 {
			return
		}
		seqs := make([]int64, len(rows))
		for i, r := range rows {
			seqs[i] = r.Seq
		}
		if err := st.MarkSent(ctx, seqs, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
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
		start, cpu0 := time.Now(), processCPU(b)
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
		elapsed += time.Since(start)
		cpu += processCPU(b) - cpu0
	}
	b.StopTimer()
	b.ReportMetric(float64(benchEvents*b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/op")
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

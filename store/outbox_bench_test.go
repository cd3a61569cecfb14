package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store"
	"github.com/patrold/patrold/store/storetest"
)

// enqueueRows are n finding events of about 1 KB each, what CommitRun
// writes for new findings, with ids tagged by iter.
func enqueueRows(b *testing.B, iter, n int) []findings.OutboxEvent {
	b.Helper()
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	rows := make([]findings.OutboxEvent, 0, n)
	for i := range n {
		ch := findings.Observe(nil, findings.Observation{
			Key: "high_cpu", ResourceID: fmt.Sprintf("vm/%d", 1000+i), ResourceKind: "vm", ResourceName: fmt.Sprintf("app-%d", i),
			ResourceTags: []string{"prod", "web"}, Category: findings.CategoryPerformance,
			Severity: findings.Severity(contracts.Severities[i%len(contracts.Severities)]), Source: findings.SourceDeterministic,
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
		rows = append(rows, findings.OutboxEvent{ID: fmt.Sprintf("b%d-%06d", iter, i), Subject: subject, Type: typ,
			ResourceID: ch.Finding.ResourceID, Time: now.Add(time.Duration(i) * time.Millisecond), Data: data})
	}
	return rows
}

// BenchmarkEnqueue10k: the store's half of the outbox path, 10k ~1 KB
// events in one transaction (checked, inserted, committed, cached), then
// the relay's reads and marks of them in windows of 256 (no NATS). sent=N
// first stores N such events already sent.
func BenchmarkEnqueue10k(b *testing.B) {
	for _, sent := range []int{0, 100_000} {
		b.Run(fmt.Sprintf("sent=%d", sent), func(b *testing.B) {
			ctx := context.Background()
			st := openStore(b)
			for i := 0; i*10_000 < sent; i++ {
				if err := st.Enqueue(ctx, enqueueRows(b, -1-i, 10_000)...); err != nil {
					b.Fatal(err)
				}
				storetest.MarkAllSent(b, st, 256)
			}
			var enqueue, relay time.Duration
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				rows := enqueueRows(b, i, 10_000)
				b.StartTimer()
				start := time.Now()
				if err := st.Enqueue(ctx, rows...); err != nil {
					b.Fatal(err)
				}
				mid := time.Now()
				storetest.MarkAllSent(b, st, 256)
				enqueue += mid.Sub(start)
				relay += time.Since(mid)
			}
			b.ReportMetric(float64(enqueue.Microseconds())/1e3/float64(b.N), "enqueue-ms/op")
			b.ReportMetric(float64(relay.Microseconds())/1e3/float64(b.N), "read+mark-ms/op")
		})
	}
}

// BenchmarkMarshalForm: Enqueue's check of one ~1 KB finding event.
func BenchmarkMarshalForm(b *testing.B) {
	data := enqueueRows(b, 0, 1)[0].Data
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if !store.MarshalForm(data) {
			b.Fatal("not in marshal form")
		}
	}
}

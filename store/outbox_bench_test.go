package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/patrold/patrold/store"
	"github.com/patrold/patrold/store/storetest"
)

// BenchmarkEnqueue10k: the store's half of the outbox path. It stores 10k
// ~1 KB events in one transaction (checked, inserted, committed, cached).
// Then the relay reads and marks them in windows of 256 (no NATS). sent=N
// first stores N such events already sent.
func BenchmarkEnqueue10k(b *testing.B) {
	for _, sent := range []int{0, 100_000} {
		b.Run(fmt.Sprintf("sent=%d", sent), func(b *testing.B) {
			ctx := context.Background()
			st := openStore(b)
			for i := 0; i*10_000 < sent; i++ {
				if err := st.Enqueue(ctx, storetest.FindingEvents(b, -1-i, 10_000)...); err != nil {
					b.Fatal(err)
				}
				storetest.MarkAllSent(b, st, 256)
			}
			var enqueue, relay time.Duration
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				rows := storetest.FindingEvents(b, i, 10_000)
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
	data := storetest.FindingEvents(b, 0, 1)[0].Data
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if !store.MarshalForm(data) {
			b.Fatal("not in marshal form")
		}
	}
}

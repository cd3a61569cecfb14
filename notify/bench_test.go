package notify

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
)

// BenchmarkAlertmanagerResend measures one resend pass over a large active
// set: collecting the due alerts and encoding the request body.
func BenchmarkAlertmanagerResend(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("active=%d", n), func(b *testing.B) {
			c := &clock{t: time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)}
			s := testAMSink(b, c)
			for i := range n {
				f := testFinding(fmt.Sprintf("vm/%d", i), "vm", findings.CategoryPerformance, "high_memory", findings.SeverityWarning)
				s.apply(decodedB(b, findingRow(b, fmt.Sprintf("e%d", i), "opened", f, c.now())), uint64(i+1))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := json.Marshal(s.due()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAlertmanagerApply measures decoding one finding event and
// applying it to the state.
func BenchmarkAlertmanagerApply(b *testing.B) {
	c := &clock{t: time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)}
	s := testAMSink(b, c)
	f := testFinding("storage/pve1/local-zfs", "storage", findings.CategoryCapacity, "high_disk", findings.SeverityCritical)
	raw := envelope(b, "patrold.finding.repeated", f.ResourceID, f)
	b.ReportAllocs()
	seq := uint64(0)
	for b.Loop() {
		ev, err := decodeFindingEvent(raw)
		if err != nil {
			b.Fatal(err)
		}
		seq++
		s.apply(ev, seq)
	}
}

func decodedB(b *testing.B, row contracts.OutboxEvent) *findingEvent {
	b.Helper()
	raw, err := json.Marshal(map[string]any{"specversion": "1.0", "id": row.ID, "source": "patrold/test", "type": row.Type,
		"time": row.Time, "subject": row.ResourceID, "datacontenttype": "application/json", "data": row.Data})
	if err != nil {
		b.Fatal(err)
	}
	ev, err := decodeFindingEvent(raw)
	if err != nil {
		b.Fatal(err)
	}
	return ev
}

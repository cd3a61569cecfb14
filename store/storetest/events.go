package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model/prompt"
)

// FindingEvents are n finding events of about 1 KB each: real finding
// event data (a whole finding, as CommitRun writes it for a new one), ids
// tagged by iter so JetStream does not drop a later batch as duplicates.
// The outbox benchmarks of store and bus publish them.
func FindingEvents(tb testing.TB, iter, n int) []findings.OutboxEvent {
	tb.Helper()
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	rows := make([]findings.OutboxEvent, 0, n)
	for i := range n {
		ch := findings.Observe(nil, findings.Observation{
			Key: "high_cpu", ResourceID: fmt.Sprintf("vm/%d", 1000+i), ResourceKind: "vm", ResourceName: prompt.SafeName(fmt.Sprintf("app-%d", i)),
			ResourceTags: prompt.SafeNames([]string{"prod", "web"}), Category: findings.CategoryPerformance,
			Severity: findings.Severity(contracts.Severities[i%len(contracts.Severities)]), Source: findings.SourceDeterministic,
			Title:          prompt.Safe(fmt.Sprintf("High CPU on app-%d", i), 200),
			Description:    prompt.Safe("cpu_percent_avg 97.2 over 900 s is above the critical threshold 95 (warning 85); the guest has been saturated for the whole window, and its run queue stayed above the vCPU count, so requests wait for a core.", 4000),
			Recommendation: prompt.Safe("Find the processes or guests using the CPU; consider moving load or adding capacity.", 4000),
			Evidence:       prompt.Safe("cpu_percent=97.2 cpu_percent_avg=97.2 threshold=95 window_seconds=900", 4000),
		}, now, "01JDQ5N3K5Z8J7Q6W2V1M0X9YA")
		subject, typ := findings.FindingSubject(findings.EventOpened, ch.Finding.Severity)
		data, err := json.Marshal(findings.NewFindingEventData(&ch.Finding, "first", "01JDQ5N3K5Z8J7Q6W2V1M0X9YA", now))
		if err != nil {
			tb.Fatal(err)
		}
		rows = append(rows, findings.OutboxEvent{ID: fmt.Sprintf("b%d-%06d", iter, i), Subject: subject, Type: typ,
			ResourceID: ch.Finding.ResourceID, Time: now.Add(time.Duration(i) * time.Millisecond), Data: data})
	}
	return rows
}

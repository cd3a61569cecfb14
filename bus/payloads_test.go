package bus

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/patrold/patrold/contracts"
)

// Payload fixtures for the transport tests (the decoders' own tests are in
// package contracts).

var testTime = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func validRequest() *contracts.RemediationRequest {
	return &contracts.RemediationRequest{
		FindingID: "3f1c2a9b8d7e6f50", ResourceID: "storage/pve1/local-zfs", Category: "capacity",
		Key: "high_disk", Severity: "critical", Title: "Storage almost full", Autonomy: "assisted",
		Attempt: 1, RunID: "01JRUN", RequestedAt: testTime,
	}
}

func validOutcome() *contracts.RemediationOutcome {
	return &contracts.RemediationOutcome{
		SessionID: "sess-1", FindingID: "3f1c2a9b8d7e6f50", Attempt: 1, Outcome: contracts.OutcomeFixVerified,
		Driver: contracts.DriverPlaybook, Summary: "pruned snapshots; usage now 61%",
		StartedAt: testTime, FinishedAt: testTime.Add(time.Minute),
	}
}

// envelopeOf wraps a payload the way the relay does.
func envelopeOf(t testing.TB, typ string, payload any) []byte {
	t.Helper()
	data, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(contracts.Event{SpecVersion: "1.0", ID: "e1", Source: "patrold/test", Type: typ,
		Time: testTime, DataContentType: contracts.ContentTypeJSON, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

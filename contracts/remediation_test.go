package contracts

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

var testTime = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func validRequest() *RemediationRequest {
	return &RemediationRequest{
		FindingID: "3f1c2a9b8d7e6f50", ResourceID: "storage/pve1/local-zfs", Category: "capacity",
		Key: "high_disk", Severity: "critical", Title: "Storage almost full", Autonomy: "assisted",
		Attempt: 1, RunID: "01JRUN", RequestedAt: testTime,
	}
}

func validOutcome() *RemediationOutcome {
	return &RemediationOutcome{
		SessionID: "sess-1", FindingID: "3f1c2a9b8d7e6f50", Attempt: 1, Outcome: OutcomeFixVerified,
		Driver: DriverPlaybook, Summary: "pruned snapshots; usage now 61%",
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
	b, err := json.Marshal(Event{SpecVersion: "1.0", ID: "e1", Source: "patrold/test", Type: typ,
		Time: testTime, DataContentType: ContentTypeJSON, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeOutcomeAcceptsEnvelopeAndBarePayload(t *testing.T) {
	want := validOutcome()
	bare, _ := json.Marshal(want)
	for name, raw := range map[string][]byte{"bare": bare, "envelope": envelopeOf(t, TypeRemediationOutcome, want)} {
		got, err := DecodeOutcome(raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if *got != *want {
			t.Errorf("%s: got %+v, want %+v", name, got, want)
		}
	}
}

func TestDecodeOutcomeNamesTheField(t *testing.T) {
	mut := func(f func(o *RemediationOutcome)) []byte {
		o := validOutcome()
		f(o)
		return envelopeOf(t, TypeRemediationOutcome, o)
	}
	cases := []struct {
		name, want string
		raw        []byte
	}{
		{"not json", "not valid JSON", []byte("{nope")},
		{"array", "cannot unmarshal array", []byte(`[1,2]`)},
		{"wrong type", "type: must be", envelopeOf(t, TypeRemediationRequest, validOutcome())},
		{"unknown outcome", "outcome: \"fixed_probably\" is not one of", mut(func(o *RemediationOutcome) { o.Outcome = "fixed_probably" })},
		{"missing finding", "finding_id: must be 16", mut(func(o *RemediationOutcome) { o.FindingID = "" })},
		{"upper-case finding", "finding_id: must be 16", mut(func(o *RemediationOutcome) { o.FindingID = "3F1C2A9B8D7E6F50" })},
		{"missing session", "session_id: required", mut(func(o *RemediationOutcome) { o.SessionID = "" })},
		{"attempt", "attempt: must be at least 1", mut(func(o *RemediationOutcome) { o.Attempt = 0 })},
		{"driver", "driver: \"human\"", mut(func(o *RemediationOutcome) { o.Driver = "human" })},
		{"started", "started_at: required", mut(func(o *RemediationOutcome) { o.StartedAt = time.Time{} })},
		{"finished before", "finished_at: ", mut(func(o *RemediationOutcome) { o.FinishedAt = testTime.Add(-time.Second) })},
		{"unknown field", "unknown field \"verdict\"", []byte(`{"session_id":"s","verdict":"ok"}`)},
		{"trailing", "trailing data", append(mut(func(*RemediationOutcome) {}), []byte(` {}`)...)},
		{"bad specversion", "specversion: must be \"1.0\"", []byte(`{"specversion":"0.3","id":"x","source":"s","type":"patrold.remediation.outcome","time":"2025-03-01T00:00:00Z","datacontenttype":"application/json","data":{}}`)},
		{"no data", "data: required", []byte(`{"specversion":"1.0","id":"x","source":"s","type":"patrold.remediation.outcome","time":"2025-03-01T00:00:00Z","datacontenttype":"application/json"}`)},
		{"bad extension", "not a CloudEvents attribute", []byte(`{"specversion":"1.0","Bad-Ext":1}`)},
		{"bad time", "time: ", []byte(`{"specversion":"1.0","id":"x","source":"s","type":"t","time":"yesterday","datacontenttype":"application/json","data":{}}`)},
	}
	for _, c := range cases {
		_, err := DecodeOutcome(c.raw)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

func TestDecodeRequestNamesTheField(t *testing.T) {
	if _, err := DecodeRequest(envelopeOf(t, TypeRemediationRequest, validRequest())); err != nil {
		t.Fatalf("valid request: %v", err)
	}
	cases := map[string]func(r *RemediationRequest){
		"finding_id":   func(r *RemediationRequest) { r.FindingID = "short" },
		"resource_id":  func(r *RemediationRequest) { r.ResourceID = "" },
		"category":     func(r *RemediationRequest) { r.Category = "vibes" },
		"key":          func(r *RemediationRequest) { r.Key = "" },
		"severity":     func(r *RemediationRequest) { r.Severity = "urgent" },
		"title":        func(r *RemediationRequest) { r.Title = "" },
		"autonomy":     func(r *RemediationRequest) { r.Autonomy = "monitor" },
		"attempt":      func(r *RemediationRequest) { r.Attempt = -1 },
		"run_id":       func(r *RemediationRequest) { r.RunID = "" },
		"requested_at": func(r *RemediationRequest) { r.RequestedAt = time.Time{} },
	}
	for field, f := range cases {
		r := validRequest()
		f(r)
		_, err := DecodeRequest(envelopeOf(t, TypeRemediationRequest, r))
		if err == nil || !strings.HasPrefix(err.Error(), field+":") {
			t.Errorf("%s: error %v does not start with the field", field, err)
		}
	}
	if _, err := DecodeRequest(envelopeOf(t, TypeRemediationOutcome, validRequest())); err == nil {
		t.Error("a request under the outcome type was accepted")
	}
}

// TestFindingID: only a finding event's row names a finding (its
// data.finding.id); a run event, a finding event without an id and data
// that is not JSON name none.
func TestFindingID(t *testing.T) {
	for _, tc := range []struct {
		row  OutboxEvent
		want string
	}{
		{OutboxEvent{Type: "patrold.finding.opened", Data: json.RawMessage(`{"finding":{"id":"3f1c"},"reason":"first"}`)}, "3f1c"},
		{OutboxEvent{Type: "patrold.run.completed", Data: json.RawMessage(`{"finding":{"id":"3f1c"}}`)}, ""},
		{OutboxEvent{Type: "patrold.finding.resolved", Data: json.RawMessage(`{"finding":{}}`)}, ""},
		{OutboxEvent{Type: "patrold.finding.resolved", Data: json.RawMessage(`{"finding":`)}, ""},
	} {
		got, ok := FindingID(tc.row)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%s %s: %q %v, want %q", tc.row.Type, tc.row.Data, got, ok, tc.want)
		}
	}
}

package bus

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/contracts"
)

func TestValidRelative(t *testing.T) {
	for s, ok := range map[string]bool{
		"findings.opened.warning": true, "runs.completed": true, "": false, ".x": false, "x.": false,
		"a..b": false, "a.*": false, "a.>": false, "a b": false, "a\tb": false,
	} {
		if validRelative(s) != ok {
			t.Errorf("validRelative(%q) = %v", s, !ok)
		}
	}
}

// TestEnvelopeIsMarshalOfEvent holds the hand-built envelope to what
// encoding/json makes of the same Event: byte for byte, with escapes.
func TestEnvelopeIsMarshalOfEvent(t *testing.T) {
	at := time.Date(2026, 11, 29, 6, 0, 0, 123456789, time.FixedZone("x", 3600))
	rows := []contracts.OutboxEvent{
		{ID: "01JDQ5N3K5Z8J7Q6W2V1M0X9YA", Subject: "findings.opened.warning", Type: "patrold.finding.opened", ResourceID: "vm/101", Time: at,
			Data: json.RawMessage(`{"id":"abc","title":"High CPU on \u003cdb\u003e","n":1.5,"tags":["a"]}`)},
		{ID: "id-2", Subject: "runs.completed", Type: "patrold.run.completed", Time: at.Add(time.Hour), Data: json.RawMessage(`{}`)},
		{ID: "id \"3\" <&>", Subject: "findings.resolved.info", Type: "t\u2028\x01é", ResourceID: "disk/pve1/sda\\x", Time: at, Data: json.RawMessage(`[1,2]`)},
	}
	for _, row := range rows {
		want, err := json.Marshal(contracts.NewEvent(row, "patrold/h<1>"))
		if err != nil {
			t.Fatal(err)
		}
		msg, err := EventMessage("patrol", "patrold/h<1>", row)
		if err != nil {
			t.Fatal(err)
		}
		if string(msg.Data) != string(want) {
			t.Errorf("envelope\n%s\nencoding/json\n%s", msg.Data, want)
		}
		ev := contracts.NewEvent(row, "patrold/h<1>")
		ev.DataRef = "http://h:9477/ui/findings/a%2Fb?<x>"
		want, _ = json.Marshal(ev)
		msg, err = EventMessageRef("patrol", "patrold/h<1>", ev.DataRef, row)
		if err != nil {
			t.Fatal(err)
		}
		if string(msg.Data) != string(want) {
			t.Errorf("envelope with dataref\n%s\nencoding/json\n%s", msg.Data, want)
		}
		if _, err := contracts.DecodeEvent(msg.Data); err != nil {
			t.Errorf("an envelope with dataref does not decode: %v", err)
		}
	}
	if _, err := EventMessage("patrol", "s", contracts.OutboxEvent{ID: "x", Subject: "runs.completed"}); err == nil || err.Error() != "data is empty" {
		t.Errorf("empty data: %v", err)
	}
}

func TestOutcomeEventRoundTrip(t *testing.T) {
	row, err := contracts.OutcomeEvent("out-1", validOutcome(), testTime)
	if err != nil {
		t.Fatal(err)
	}
	if row.Subject != "remediation.outcomes" || row.Type != "patrold.remediation.outcome" || row.ResourceID != "" {
		t.Fatalf("row %+v", row)
	}
	msg, err := EventMessage("patrol", "patrold/w1", row)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Subject != "patrol.remediation.outcomes" || msg.Header.Get("Nats-Msg-Id") != "out-1" {
		t.Fatalf("message subject %q header %v", msg.Subject, msg.Header)
	}
	got, err := contracts.DecodeOutcome(msg.Data)
	if err != nil {
		t.Fatal(err)
	}
	if *got != *validOutcome() {
		t.Fatalf("round trip: %+v", got)
	}
	bad := validOutcome()
	bad.Outcome = "maybe"
	if _, err := contracts.OutcomeEvent("out-2", bad, testTime); err == nil || !strings.Contains(err.Error(), "outcome:") {
		t.Fatalf("invalid outcome row built: %v", err)
	}
	if _, err := contracts.RequestEvent("", validRequest(), testTime); err == nil || !strings.Contains(err.Error(), "id:") {
		t.Fatalf("row without id built: %v", err)
	}
}

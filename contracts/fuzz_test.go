package contracts

import (
	"encoding/json"
	"slices"
	"testing"
)

// Decoders of NATS payloads must never panic, and whatever they accept must
// be valid and survive a round trip through the envelope unchanged.

func FuzzDecodeOutcome(f *testing.F) {
	valid, _ := json.Marshal(validOutcome())
	f.Add(valid)
	f.Add(envelopeOf(f, TypeRemediationOutcome, validOutcome()))
	f.Add(envelopeOf(f, TypeRemediationRequest, validOutcome()))
	f.Add([]byte(`{"specversion":"1.0","id":"x","source":"s","type":"patrold.remediation.outcome","time":"2025-03-01T00:00:00Z","datacontenttype":"application/json","data":{"outcome":"fix_verified"},"traceparent":"00"}`))
	f.Add([]byte(`{"session_id":"s","finding_id":"0123456789abcdef","attempt":1,"outcome":"cannot_fix","driver":"model","summary":"","started_at":"2025-03-01T00:00:00Z","finished_at":"2025-03-01T00:00:00Z"} x`))
	f.Add([]byte(`null`))
	f.Add([]byte(`"fix_verified"`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		o, err := DecodeOutcome(raw)
		if err != nil {
			if o != nil {
				t.Fatal("value returned with an error")
			}
			return
		}
		if err := o.Validate(); err != nil {
			t.Fatalf("accepted an invalid outcome: %v", err)
		}
		row, err := OutcomeEvent("fuzz", o, testTime)
		if err != nil {
			t.Fatal(err)
		}
		body, err := AppendEnvelope(nil, row, "patrold/fuzz")
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeOutcome(body)
		if err != nil {
			t.Fatalf("round trip: %v", err)
		}
		if !back.StartedAt.Equal(o.StartedAt) || !back.FinishedAt.Equal(o.FinishedAt) {
			t.Fatalf("times changed: %+v -> %+v", o, back)
		}
		back.StartedAt, back.FinishedAt = o.StartedAt, o.FinishedAt
		if *back != *o {
			t.Fatalf("round trip changed the outcome: %+v -> %+v", o, back)
		}
	})
}

func FuzzDecodeRequest(f *testing.F) {
	valid, _ := json.Marshal(validRequest())
	f.Add(valid)
	f.Add(envelopeOf(f, TypeRemediationRequest, validRequest()))
	f.Add(envelopeOf(f, TypeRemediationOutcome, validRequest()))
	f.Add([]byte(`{"finding_id":"0123456789abcdef","attempt":1e9}`))
	f.Add([]byte(`{"specversion":"1.0","data":"not an object"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := DecodeRequest(raw)
		if err != nil {
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("accepted an invalid request: %v", err)
		}
		row, err := RequestEvent("fuzz", r, testTime)
		if err != nil {
			t.Fatal(err)
		}
		body, err := AppendEnvelope(nil, row, "patrold/fuzz")
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeRequest(body)
		if err != nil {
			t.Fatalf("round trip: %v", err)
		}
		if !back.RequestedAt.Equal(r.RequestedAt) {
			t.Fatalf("time changed: %v -> %v", r.RequestedAt, back.RequestedAt)
		}
		back.RequestedAt = r.RequestedAt
		if *back != *r {
			t.Fatalf("round trip changed the request: %+v -> %+v", r, back)
		}
	})
}

func FuzzDecodeEvent(f *testing.F) {
	f.Add(envelopeOf(f, "patrold.finding.opened", map[string]any{"index": 1}))
	f.Add([]byte(`{"specversion":"1.0","id":"","source":"s"}`))
	f.Add([]byte(`{"specversion":"1.0","id":"x","source":"s","type":"t","time":"2025-03-01T00:00:00Z","datacontenttype":"application/json","data":{},"ext1":true}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ev, err := DecodeEvent(raw)
		if err != nil {
			return
		}
		if err := ev.Validate(); err != nil {
			t.Fatalf("accepted an invalid envelope: %v", err)
		}
		if !json.Valid(ev.Data) {
			t.Fatalf("accepted invalid data %q", ev.Data)
		}
	})
}

// FuzzDecodeTriggerRequest: what the decoder accepts names at least one
// resource and survives a round trip unchanged.
func FuzzDecodeTriggerRequest(f *testing.F) {
	f.Add([]byte(`{"resources": ["node/pve1"], "reason": "HostDown"}`))
	f.Add([]byte(`{"resources": []}`))
	f.Add([]byte(`{"resources": ["a"], "extra": 1}`))
	f.Add([]byte(`{"resources": ["a"]} {}`))
	f.Add([]byte(`null`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := DecodeTriggerRequest(raw)
		if err != nil {
			if r.Resources != nil || r.Reason != "" {
				t.Fatal("value returned with an error")
			}
			return
		}
		if len(r.Resources) == 0 {
			t.Fatalf("accepted a request naming no resource: %s", raw)
		}
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeTriggerRequest(data)
		if err != nil || !slices.Equal(back.Resources, r.Resources) || back.Reason != r.Reason {
			t.Fatalf("round trip: %+v -> %+v %v", r, back, err)
		}
	})
}

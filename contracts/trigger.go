package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Trigger requests (docs/NATS.md#trigger-requests): a monitor asks the
// writer for a scoped run over NATS, as POST /api/v1/hooks/alertmanager
// asks over HTTP. The subject is core NATS request/reply outside the
// patrol stream; every request is signed with the deployment key.
const (
	// StemTrigger is the first token of the trigger subject and its
	// label in patrold_bus_refused_total.
	StemTrigger = "patrold_trigger"
	// TriggerQueue: one writer takes each request.
	TriggerQueue = "patrold-writer"
	// MaxTriggerBytes bounds a trigger request's body.
	MaxTriggerBytes = 256 << 10
)

// TriggerSubject is the request/reply subject of trigger requests.
func TriggerSubject(prefix string) string { return StemTrigger + "." + prefix }

// TriggerRequest asks for a scoped run over resources for reason.
type TriggerRequest struct {
	Resources []string `json:"resources"`
	Reason    string   `json:"reason,omitempty"`
}

// TriggerAnswer is the writer's signed answer to a TriggerRequest:
// outcome is taken, coalesced or refused (the outcome label of
// patrold_patrol_triggers_total), or "invalid" with error naming the
// field; run_id is the run started.
type TriggerAnswer struct {
	Outcome   string   `json:"outcome"`
	RunID     string   `json:"run_id,omitempty"`
	Resources []string `json:"resources"`
	Error     string   `json:"error,omitempty"`
}

// Outcomes of a trigger request besides the trigger limits' own.
const (
	// TriggerInvalid: the request does not decode or its scope is unfit.
	TriggerInvalid = "invalid"
	// TriggerUnauthenticated: the request does not verify with the
	// deployment key.
	TriggerUnauthenticated = "unauthenticated"
)

// DecodeTriggerRequest reads a trigger request, naming the field that
// is wrong: one JSON object, no unknown fields, resources a non-empty
// array of strings. What the resources must be is the scope rule's
// (patrol.CheckScope).
func DecodeTriggerRequest(data []byte) (TriggerRequest, error) {
	if len(data) > MaxTriggerBytes {
		return TriggerRequest{}, fmt.Errorf("trigger request: %d bytes, at most %d", len(data), MaxTriggerBytes)
	}
	var r TriggerRequest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return TriggerRequest{}, fmt.Errorf("trigger request: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return TriggerRequest{}, errors.New("trigger request: data after the JSON object")
	}
	if len(r.Resources) == 0 {
		return TriggerRequest{}, errors.New("trigger request: resources: required, at least one resource id")
	}
	return r, nil
}

package model

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRecorderRecordsEveryExchange(t *testing.T) {
	p := &fakeProvider{errs: []error{nil, &Error{Provider: "fake", Kind: ErrorAuth, Status: 401, Err: errors.New("key [redacted] rejected")}}}
	c := &clock{t: t0}
	rec, err := NewRecorder(p, func() time.Time { c.advance(250 * time.Millisecond); return c.now() })
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"id":"vm/101"}`)
	req := Request{System: "the policy", MaxTokens: 100,
		Messages: []Message{{Role: RoleUser, Content: "go"}, {Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a", Name: "get", Arguments: args}}}},
		Tools:    []ToolDef{{Name: "get", Description: "long description", Parameters: json.RawMessage(`{"type":"object"}`)}}}
	if _, err := rec.Chat(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Chat(context.Background(), req); KindOf(err) != ErrorAuth {
		t.Fatalf("err = %v", err)
	}
	args[2] = 'X' // the caller reusing its buffer must not change the record
	r := rec.Recording()
	if r.Version != RecordingVersion || r.Provider != "fake" || len(r.Exchanges) != 2 {
		t.Fatalf("recording = %+v", r)
	}
	ex := r.Exchanges[0]
	if ex.Seq != 1 || ex.DurationMS != 250 || !ex.StartedAt.Equal(t0.Add(250*time.Millisecond)) {
		t.Fatalf("timing = %+v", ex)
	}
	if ex.Response == nil || ex.Response.Text != "ok" || ex.Error != nil {
		t.Fatalf("exchange 1 = %+v", ex)
	}
	if string(ex.Request.Messages[1].ToolCalls[0].Arguments) != `{"id":"vm/101"}` || ex.Request.Tools[0] != "get" || ex.Request.SystemChars != 10 {
		t.Fatalf("request = %+v", ex.Request)
	}
	e2 := r.Exchanges[1].Error
	if e2 == nil || e2.Kind != ErrorAuth || e2.Status != 401 || !strings.Contains(e2.Message, "[redacted]") {
		t.Fatalf("exchange 2 error = %+v", e2)
	}
	js, err := json.Marshal(r)
	if err != nil || strings.Contains(string(js), "the policy") || strings.Contains(string(js), "long description") {
		t.Fatalf("recording json = %s (%v)", js, err)
	}
	if r.Usage() != (Usage{}) {
		t.Fatalf("usage = %+v", r.Usage())
	}
}

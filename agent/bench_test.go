package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/patrold/patrold/model"
)

func BenchmarkFSMCycle(b *testing.B) {
	f := NewFSM()
	now := time.Now()
	for b.Loop() {
		f.OnToolSuccess(KindRead, "get", now)
		if f.CanExecute(KindWrite, "restart") == nil {
			f.BeginWrite("restart")
			f.OnToolSuccess(KindWrite, "restart", now)
		}
		_ = f.CanExecute(KindWrite, "restart")
	}
}

// BenchmarkExecuteBatch8 measures the pipeline overhead for a turn of 8
// cheap reads with distinct arguments (pre-check, schema validation,
// parallel execution, post-processing and JSON encoding).
func BenchmarkExecuteBatch8(b *testing.B) {
	tool := Tool{Name: "read_logs", Kind: KindRead, Schema: json.RawMessage(idSchema),
		Handler: func(context.Context, json.RawMessage) (any, error) {
			return map[string]string{"status": "running"}, nil
		}}
	reg, err := NewRegistry(tool)
	if err != nil {
		b.Fatal(err)
	}
	s, err := NewSession(Options{Registry: reg, Profile: Profile{Name: "bench", Tools: []string{"read_logs"}}})
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for b.Loop() {
		calls := make([]model.ToolCall, 8)
		for i := range calls {
			n++
			calls[i] = model.ToolCall{Name: "read_logs", Arguments: json.RawMessage(fmt.Sprintf(`{"id":"vm/%d"}`, n))}
		}
		s.ExecuteBatch(context.Background(), 1, calls)
		s.steps = s.steps[:0]
	}
}

func BenchmarkValidateArgs(b *testing.B) {
	s, err := compileSchema(json.RawMessage(richSchema))
	if err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"id":"vm/1","action":"stop","count":3,"tags":["a","b"],"limits":{"cpu":2}}`)
	for b.Loop() {
		if err := s.validateArgs(args); err != nil {
			b.Fatal(err)
		}
	}
}

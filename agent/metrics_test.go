package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/patrold/patrold/model"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetrics(t *testing.T) {
	if m, err := NewMetrics(nil); m != nil || err != nil {
		t.Fatalf("nil registerer: %v %v", m, err)
	}
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewMetrics(reg); err == nil {
		t.Fatal("double registration accepted")
	}
	// Every label combination exists before any call.
	if n := testutil.CollectAndCount(m.fsmBlocks); n != len(States())*len(Kinds()) {
		t.Fatalf("fsm block series %d", n)
	}
	if n := testutil.CollectAndCount(m.toolCalls); n != len(Kinds())*len(statuses) {
		t.Fatalf("tool call series %d", n)
	}
	var cnt calls
	read := tc("read_logs", `{"id":"a"}`)
	p := &scripted{turns: []model.Response{
		turn(tc("ask_operator", ""), tc("restart", `{"id":"a"}`)),
		turn(tc("get_resource", `{"id":"a"}`)),
		turn(tc("restart", `{"id":"a"}`)),
		text("fixed"), text("fixed!"),
		turn(read), turn(read), turn(read), turn(read),
		text("done"),
	}}
	s := newTestSession(t, testTools(&cnt), p, func(o *Options) { o.Metrics = m; o.MaxTurns = 10 })
	if _, err := s.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP patrold_agent_final_answer_blocks_total Final answers refused because a write was not verified.
# TYPE patrold_agent_final_answer_blocks_total counter
patrold_agent_final_answer_blocks_total 2
# HELP patrold_agent_look_first_refusals_total Operator questions refused because no real tool had been tried yet.
# TYPE patrold_agent_look_first_refusals_total counter
patrold_agent_look_first_refusals_total 1
# HELP patrold_agent_loop_detections_total Tool calls refused as repeats of the same call since the last write.
# TYPE patrold_agent_loop_detections_total counter
patrold_agent_loop_detections_total 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"patrold_agent_final_answer_blocks_total", "patrold_agent_look_first_refusals_total", "patrold_agent_loop_detections_total"); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		got  float64
		want float64
		what string
	}{
		{testutil.ToFloat64(m.fsmBlocks.WithLabelValues("RESOLVING", "write")), 1, "write blocked in RESOLVING"},
		{testutil.ToFloat64(m.toolCalls.WithLabelValues("write", "ok")), 1, "writes ok"},
		{testutil.ToFloat64(m.toolCalls.WithLabelValues("read", "ok")), 3, "reads ok"},
		{testutil.ToFloat64(m.toolCalls.WithLabelValues("read", "blocked")), 1, "reads blocked (loop)"},
		{testutil.ToFloat64(m.toolCalls.WithLabelValues("user_input", "blocked")), 1, "questions blocked"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
}

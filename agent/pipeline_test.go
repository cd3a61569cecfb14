package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/patrold/patrold/model"
)

// TestParallelCapAndOrder: 8 reads run at most MaxParallelTools at a time,
// and their results reach the model in provider order whatever the
// finishing order.
func TestParallelCapAndOrder(t *testing.T) {
	var cur, peak atomic.Int32
	probe := Tool{Name: "read_logs", Kind: KindRead, Schema: json.RawMessage(`{"type":"object","properties":{"i":{"type":"integer"}},"required":["i"]}`),
		Handler: func(_ context.Context, args json.RawMessage) (any, error) {
			var a struct{ I int }
			_ = json.Unmarshal(args, &a)
			n := cur.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(time.Duration(80-8*a.I) * time.Millisecond) // later calls finish first
			cur.Add(-1)
			return map[string]int{"i": a.I}, nil
		}}
	var batch []model.ToolCall
	for i := range 8 {
		batch = append(batch, tc("read_logs", fmt.Sprintf(`{"i":%d}`, i)))
	}
	p := &scripted{turns: []model.Response{turn(batch...)}}
	s := newTestSession(t, []Tool{probe}, p, nil)
	start := time.Now()
	res, err := s.Run(context.Background(), []model.Message{{Role: model.RoleUser, Content: "go"}})
	if err != nil {
		t.Fatal(err)
	}
	// docs/ASSISTANT_SAFETY.md fixes the cap at 4; the literal keeps a changed constant from passing.
	if got := peak.Load(); got != 4 {
		t.Fatalf("peak concurrency %d, want exactly 4 (MaxParallelTools = %d)", got, MaxParallelTools)
	}
	if el := time.Since(start); el < 60*time.Millisecond {
		t.Fatalf("8 calls finished in %s: not bounded", el)
	}
	var got []int
	for _, m := range res.Messages {
		if m.Role != model.RoleTool {
			continue
		}
		var e struct{ Result struct{ I int } }
		if err := json.Unmarshal([]byte(m.Content), &e); err != nil {
			t.Fatal(err)
		}
		got = append(got, e.Result.I)
	}
	if !slices.Equal(got, []int{0, 1, 2, 3, 4, 5, 6, 7}) {
		t.Fatalf("results out of provider order: %v", got)
	}
	for i, st := range res.Steps {
		if st.CallID != fmt.Sprintf("c%d", i+1) || st.Status != StatusOK {
			t.Fatalf("step %d: %+v", i, st)
		}
	}
}

// TestBatchSecondWriteRefused: [read, write, write] runs the first write only.
func TestBatchSecondWriteRefused(t *testing.T) {
	var cnt calls
	p := &scripted{turns: []model.Response{
		turn(tc("get_resource", `{"id":"vm/1"}`)),
		turn(tc("read_logs", `{"id":"vm/1"}`), tc("restart", `{"id":"vm/1"}`), tc("restart", `{"id":"vm/2"}`)),
	}}
	s := newTestSession(t, testTools(&cnt), p, func(o *Options) { o.MaxTurns = 2 })
	res, err := s.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cnt.get("restart") != 1 {
		t.Fatalf("restart ran %d times, want 1", cnt.get("restart"))
	}
	want := []string{"1:get_resource:ok:", "2:read_logs:ok:", "2:restart:ok:", "2:restart:blocked:FSM_BLOCKED"}
	if got := stepCodes(res.Steps); !slices.Equal(got, want) {
		t.Fatalf("steps %v, want %v", got, want)
	}
	w := res.Steps[2]
	if w.StateBefore != StateReading || w.StateAfter != StateVerifying || w.Kind != KindWrite {
		t.Fatalf("write step %+v", w)
	}
	e := decodeEnvelope(t, res.Messages[len(res.Messages)-1].Content)
	if e.OK || e.Error.Code != CodeFSMBlocked || e.Error.Details["state"] != "WRITING" || e.Error.Details["kind"] != "write" {
		t.Fatalf("blocked result %+v", e.Error)
	}
	if !res.Unverified || res.Verified || res.StopReason != StopTurnLimit {
		t.Fatalf("ended %s verified=%v unverified=%v", res.StopReason, res.Verified, res.Unverified)
	}
}

// TestFailedWriteNeedsRead: a write after a failed write is blocked until a read.
func TestFailedWriteNeedsRead(t *testing.T) {
	var cnt calls
	tools := testTools(&cnt)
	fails := true
	tools = replace(tools, Tool{Name: "restart", Kind: KindWrite, Target: TargetInfrastructure, Authority: &testAuthority{}, Handler: func(context.Context, json.RawMessage) (any, error) {
		cnt.inc("restart")
		if fails {
			fails = false
			return nil, fmt.Errorf("exit status 1")
		}
		return "restarted", nil
	}})
	p := &scripted{turns: []model.Response{
		turn(tc("get_resource", `{"id":"vm/1"}`)),
		turn(tc("restart", `{}`)),
		turn(tc("restart", `{}`)),
		turn(tc("restart", `{}`)),
		turn(tc("read_logs", `{"id":"vm/1"}`)),
		turn(tc("restart", `{}`)), // the same write again: once per episode
		turn(tc("get_resource", `{"id":"vm/2"}`)),
		turn(tc("restart", `{"id":"vm/1"}`)),
		turn(tc("read_logs", `{"id":"vm/1"}`)),
		text("restarted and verified"),
	}}
	s := newTestSession(t, tools, p, nil)
	res, err := s.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1:get_resource:ok:", "2:restart:error:EXECUTION_FAILED", "3:restart:blocked:FSM_BLOCKED",
		"4:restart:blocked:TOOL_NOT_ADVERTISED", "5:read_logs:ok:", "6:restart:blocked:POLICY_BLOCKED", "7:get_resource:ok:", "8:restart:ok:", "9:read_logs:ok:"}
	if got := stepCodes(res.Steps); !slices.Equal(got, want) {
		t.Fatalf("steps %v\nwant  %v", got, want)
	}
	if res.Steps[1].StateAfter != StateVerifying {
		t.Fatalf("failed write left %s", res.Steps[1].StateAfter)
	}
	if cnt.get("restart") != 2 || !res.Verified || res.StopReason != StopFinalAnswer || res.FinalState != StateReading {
		t.Fatalf("restart ran %d, result %+v", cnt.get("restart"), res)
	}
	if e := decodeEnvelope(t, res.Messages[len(res.Messages)-8].Content); e.Error == nil || e.Error.Details["check"] != string(CheckOncePerEpisode) {
		t.Fatalf("repeat write refusal: %+v", e.Error)
	}
	// The turn after a fully blocked turn offers the read tools only (a
	// write made anyway is refused as not advertised), for one turn.
	reqs := p.requests()
	if got := toolNames(reqs[3].Tools); !slices.Equal(got, []string{"get_resource", "read_logs", "list_findings"}) {
		t.Fatalf("tools of the turn after a refused turn: %v", got)
	}
	if len(reqs[2].Tools) != len(tools) || len(reqs[4].Tools) != len(tools) {
		t.Fatalf("tools advertised in turns 3 and 5: %d %d", len(reqs[2].Tools), len(reqs[4].Tools))
	}
}

func toolNames(defs []model.ToolDef) []string {
	var out []string
	for _, d := range defs {
		out = append(out, d.Name)
	}
	return out
}

// TestLoopCounterResetsAtWrite: the verifying read after a write is never a
// loop; without the write the fourth identical call is refused.
func TestLoopCounterResetsAtWrite(t *testing.T) {
	read := tc("read_logs", `{"id":"vm/1"}`)
	readReordered := tc("read_logs", ` { "id" : "vm/1" } `)
	for _, withWrite := range []bool{true, false} {
		var cnt calls
		turns := []model.Response{turn(tc("get_resource", `{"id":"vm/1"}`)), turn(read), turn(read), turn(readReordered)}
		if withWrite {
			turns = append(turns, turn(tc("restart", `{"id":"vm/1"}`)))
		}
		turns = append(turns, turn(read), text("done"))
		p := &scripted{turns: turns}
		s := newTestSession(t, testTools(&cnt), p, nil)
		res, err := s.Run(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		last := res.Steps[len(res.Steps)-1]
		if withWrite && (last.Status != StatusOK || !res.Verified) {
			t.Fatalf("verifying read refused: %v", stepCodes(res.Steps))
		}
		if !withWrite {
			if last.Code != CodeLoopDetected {
				t.Fatalf("fourth identical read: %v", stepCodes(res.Steps))
			}
			reqs := p.requests()
			if len(reqs[4].Tools) != 6 || !slices.Equal(toolNames(reqs[5].Tools), []string{"get_resource", "read_logs", "list_findings"}) {
				t.Fatalf("the turn after LOOP_DETECTED must offer the read tools only: %v", toolNames(reqs[5].Tools))
			}
		}
	}
}

// TestFindingsReadWriteOrdered: a batch that reads findings and writes one
// runs in provider order; two plain reads overlap.
func TestFindingsReadWriteOrdered(t *testing.T) {
	var mu sync.Mutex
	var order []string
	rec := func(name string, d time.Duration) Handler {
		return func(context.Context, json.RawMessage) (any, error) {
			time.Sleep(d)
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			return name, nil
		}
	}
	tools := []Tool{
		{Name: "get_resource", Kind: KindResolve, Handler: rec("get_resource", 0)},
		{Name: "list_findings", Kind: KindRead, ReadsFindings: true, Handler: rec("list_findings", 40*time.Millisecond)},
		{Name: "report_finding", Kind: KindWrite, Target: TargetPatrolState, WritesFindings: true, Handler: rec("report_finding", 0)},
		{Name: "read_logs", Kind: KindRead, Handler: rec("read_logs", 0)},
	}
	p := &scripted{turns: []model.Response{
		turn(tc("get_resource", "")),
		turn(tc("list_findings", ""), tc("report_finding", ""), tc("report_finding", "")),
		turn(tc("list_findings", ""), tc("read_logs", "")),
	}}
	s := newTestSession(t, tools, p, func(o *Options) { o.MaxTurns = 3 })
	res, err := s.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"get_resource", "list_findings", "report_finding", "report_finding", "read_logs", "list_findings"}
	if !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	// patrol_state writes do not move the FSM: two in one batch both run.
	for _, st := range res.Steps[2:4] {
		if st.Status != StatusOK || st.StateAfter != StateReading {
			t.Fatalf("patrol_state write %+v", st)
		}
	}
	if res.Wrote {
		t.Fatal("patrol_state writes counted as an infrastructure write")
	}
}

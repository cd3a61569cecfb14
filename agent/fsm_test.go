package agent

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func TestFSMTransitions(t *testing.T) {
	f := NewFSM()
	if f.State() != StateResolving {
		t.Fatalf("start state %s", f.State())
	}
	err := f.CanExecute(KindWrite, "restart")
	var blocked *FSMBlockedError
	if !errors.As(err, &blocked) || blocked.State != StateResolving || blocked.Kind != KindWrite || blocked.Tool != "restart" || !blocked.Recoverable {
		t.Fatalf("write in RESOLVING: %#v", err)
	}
	if blocked.Code() != "FSM_BLOCKED" || !strings.Contains(blocked.Error(), "FSM_BLOCKED") {
		t.Fatalf("code %q error %q", blocked.Code(), blocked.Error())
	}
	f.OnToolFailure(KindRead, "get", t0) // a failed read establishes nothing
	if f.State() != StateResolving {
		t.Fatalf("failed read moved to %s", f.State())
	}
	f.OnToolSuccess(KindUserInput, "ask", t0)
	if f.State() != StateResolving {
		t.Fatalf("user_input moved to %s", f.State())
	}
	f.OnToolSuccess(KindResolve, "get", t0)
	if f.State() != StateReading {
		t.Fatalf("resolve success: %s", f.State())
	}
	if err := f.CanExecute(KindWrite, "restart"); err != nil {
		t.Fatalf("write in READING: %v", err)
	}
	f.BeginWrite("restart")
	if f.State() != StateWriting || f.CanExecute(KindWrite, "other") == nil || f.CanFinalAnswer() == nil {
		t.Fatalf("WRITING must block writes and the final answer")
	}
	f.OnToolFailure(KindWrite, "restart", t0.Add(time.Second))
	if f.State() != StateVerifying || f.ReadAfterWrite() || !f.WroteThisEpisode() {
		t.Fatalf("failed write: state %s raw %v wrote %v", f.State(), f.ReadAfterWrite(), f.WroteThisEpisode())
	}
	if tool, at := f.LastWrite(); tool != "restart" || !at.Equal(t0.Add(time.Second)) {
		t.Fatalf("last write %s %s", tool, at)
	}
	for i := 1; i <= 5; i++ {
		if f.CanExecute(KindWrite, "restart") == nil {
			t.Fatalf("attempt %d: write in VERIFYING admitted", i)
		}
		if f.ConsecutiveVerifyBlocks() != i {
			t.Fatalf("verify blocks %d, want %d", f.ConsecutiveVerifyBlocks(), i)
		}
	}
	if f.CanFinalAnswer() == nil || f.CompleteVerification() {
		t.Fatal("unverified write: final answer or completion allowed")
	}
	f.OnToolSuccess(KindRead, "logs", t0)
	if f.State() != StateVerifying || !f.ReadAfterWrite() || f.ConsecutiveVerifyBlocks() != 0 {
		t.Fatalf("verifying read: state %s raw %v blocks %d", f.State(), f.ReadAfterWrite(), f.ConsecutiveVerifyBlocks())
	}
	if err := f.CanFinalAnswer(); err != nil {
		t.Fatalf("verified: %v", err)
	}
	if !f.CompleteVerification() || f.State() != StateReading || !f.WroteThisEpisode() {
		t.Fatalf("complete verification: %s wrote %v", f.State(), f.WroteThisEpisode())
	}
	f.Reset()
	if f.State() != StateResolving || f.WroteThisEpisode() || f.ReadAfterWrite() {
		t.Fatal("Reset kept tracking")
	}
}

func TestFSMCancelAndKeepProgress(t *testing.T) {
	f := NewFSM()
	f.OnToolSuccess(KindRead, "get", t0)
	f.BeginWrite("restart")
	f.CancelWrite()
	if f.State() != StateReading || f.WroteThisEpisode() {
		t.Fatalf("cancelled write: %s wrote %v", f.State(), f.WroteThisEpisode())
	}
	f.BeginWrite("restart")
	f.OnToolSuccess(KindWrite, "restart", t0)
	// read -> write -> ResetKeepProgress -> write: the reset never waives
	// the read the first write owes.
	f.ResetKeepProgress()
	if f.State() != StateVerifying || f.ReadAfterWrite() || f.CanExecute(KindWrite, "restart") == nil {
		t.Fatalf("ResetKeepProgress on an unverified write: %s raw %v", f.State(), f.ReadAfterWrite())
	}
	f.BeginWrite("restart") // refused by the table: nothing changes
	if f.State() != StateVerifying || f.Refused() != 2 {
		t.Fatalf("BeginWrite in unverified VERIFYING: %s refused %d", f.State(), f.Refused())
	}
	f.OnToolSuccessVerifies(KindRead, "get_finding", false, t0) // patrold's own record: not a verification
	if f.ReadAfterWrite() || f.CanExecute(KindWrite, "restart") == nil {
		t.Fatal("a non-verifying read verified the write")
	}
	f.OnToolSuccess(KindRead, "check", t0)
	f.ResetKeepProgress()
	if f.State() != StateReading || !f.WroteThisEpisode() || f.ReadAfterWrite() {
		t.Fatalf("ResetKeepProgress after a verified write: %s wrote %v", f.State(), f.WroteThisEpisode())
	}
	g := NewFSM()
	g.BeginWrite("restart")
	if g.State() != StateResolving {
		t.Fatalf("BeginWrite accepted in RESOLVING: %s", g.State())
	}
}

func TestFSMPendingRecoveries(t *testing.T) {
	f := NewFSM()
	err := f.CanExecute(KindWrite, "restart").(*FSMBlockedError)
	f.RecordBlock(err, t0)
	f.RecordBlock(f.CanExecute(KindWrite, "resize").(*FSMBlockedError), t0.Add(5*time.Minute))
	if got := f.PendingRecoveries(t0.Add(time.Minute)); len(got) != 2 || got[0].Tool != "resize" || got[1].Tool != "restart" {
		t.Fatalf("pending: %+v", got)
	}
	f.OnToolSuccess(KindRead, "get", t0.Add(2*time.Minute))
	f.OnToolSuccess(KindWrite, "resize", t0.Add(3*time.Minute)) // success of the same tool clears it
	if got := f.PendingRecoveries(t0.Add(3 * time.Minute)); len(got) != 1 || got[0].Tool != "restart" {
		t.Fatalf("after resize success: %+v", got)
	}
	if got := f.PendingRecoveries(t0.Add(RecoveryTTL - time.Second)); len(got) != 1 {
		t.Fatalf("expired early: %+v", got)
	}
	if got := f.PendingRecoveries(t0.Add(RecoveryTTL)); len(got) != 0 {
		t.Fatalf("not expired after %s: %+v", RecoveryTTL, got)
	}
	f.RecordBlock(err, t0)
	f.Reset()
	if got := f.PendingRecoveries(t0); len(got) != 0 {
		t.Fatalf("Reset kept pending: %+v", got)
	}
}

func TestFSMJSONResume(t *testing.T) {
	f := NewFSM()
	f.OnToolSuccess(KindResolve, "get", t0)
	f.BeginWrite("restart")
	f.OnToolSuccess(KindWrite, "restart", t0)
	f.RecordBlock(f.CanExecute(KindWrite, "restart").(*FSMBlockedError), t0)
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var g FSM
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if g.State() != StateVerifying || g.ReadAfterWrite() || !g.WroteThisEpisode() || g.ConsecutiveVerifyBlocks() != 1 || len(g.PendingRecoveries(t0)) != 1 {
		t.Fatalf("restored: %s", b)
	}
	if g.CanExecute(KindWrite, "restart") == nil {
		t.Fatal("restored FSM admits an unverified second write")
	}
}

func TestFSMJSONRejects(t *testing.T) {
	cases := map[string]string{
		`{"state":"DONE"}`:                                                     "state: unknown state",
		`{"state":"VERIFYING"}`:                                                "state: VERIFYING without wrote_this_episode",
		`{"state":"READING","before_write":"WRITING"}`:                         "before_write:",
		`{"state":"READING","consecutive_verify_blocks":-1}`:                   "consecutive_verify_blocks:",
		`{"state":"READING","read_after_write":true}`:                          "read_after_write:",
		`{"state":"READING","pending_recoveries":[{"tool":""}]}`:               "pending_recoveries[0].tool: required",
		`{"state":"READING","pending_recoveries":[{"tool":"a"},{"tool":"a"}]}`: "pending_recoveries[1].tool: duplicate",
		`[]`: "decode fsm",
		`{"state":"READING","wrote_this_episode":true,"executed_writes":["a","a"]}`: "executed_writes[1]: duplicate",
		`{"state":"READING","wrote_this_episode":true,"executed_writes":[""]}`:      "executed_writes[0]: empty",
		`{"state":"READING","executed_writes":["a"]}`:                               "executed_writes: set without wrote_this_episode",
	}
	for in, want := range cases {
		var f FSM
		err := json.Unmarshal([]byte(in), &f)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", in, err, want)
		}
	}
}

func TestToolKindNames(t *testing.T) {
	want := []string{"resolve", "read", "write", "user_input"}
	for i, k := range Kinds() {
		if k.String() != want[i] {
			t.Errorf("%d: %s", i, k)
		}
		back, err := ParseToolKind(k.String())
		if err != nil || back != k {
			t.Errorf("parse %s: %v %v", k, back, err)
		}
	}
	if _, err := ParseToolKind("delete"); err == nil {
		t.Error("unknown kind parsed")
	}
	if ToolKind(9).Valid() || ToolKind(9).String() != "ToolKind(9)" {
		t.Error("invalid kind")
	}
}

func FuzzFSMUnmarshal(f *testing.F) {
	for _, seed := range []string{
		`{"state":"RESOLVING"}`,
		`{"state":"VERIFYING","wrote_this_episode":true,"last_write_tool":"x","last_write_at":"2026-01-01T00:00:00Z"}`,
		`{"state":"READING","pending_recoveries":[{"tool":"a","reason":"r","blocked_at":"2026-01-01T00:00:00Z"}]}`,
		`{"state":"WRITING","before_write":"READING","wrote_this_episode":true}`,
		`{"state":"READING","wrote_this_episode":true,"executed_writes":["run_action:fix"]}`,
		`null`, `{}`, `{"state":1}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var g FSM
		if err := json.Unmarshal(b, &g); err != nil {
			return
		}
		if !g.State().Valid() {
			t.Fatalf("accepted invalid state %q", g.State())
		}
		again, err := json.Marshal(&g)
		if err != nil {
			t.Fatal(err)
		}
		var h FSM
		if err := json.Unmarshal(again, &h); err != nil {
			t.Fatalf("re-decode of %s: %v", again, err)
		}
		if g.CanExecute(KindRead, "r") != nil {
			t.Fatal("restored FSM blocks reads")
		}
	})
}

func TestFSMZeroValueFailsClosed(t *testing.T) {
	var f FSM
	if f.State() != StateResolving || f.CanExecute(KindWrite, "restart") == nil {
		t.Fatalf("zero FSM: state %s admits writes", f.State())
	}
}

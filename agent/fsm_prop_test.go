package agent

import (
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// propSequences is how many random call sequences the property test runs.
const propSequences = 10000

// shadow is the property test's independent model of what must hold.
type shadow struct {
	hasTarget bool // a resolve or read succeeded since the last Reset
	needRead  bool // a write ran and no resolve or read succeeded since
}

// gate is the part of the FSM that decides what may run; blocked attempts
// must never change it.
func gate(f *FSM) FSMSnapshot {
	s := f.Snapshot()
	s.ConsecutiveVerifyBlocks = 0
	s.PendingRecoveries = nil
	return s
}

type fsmOp struct {
	Action   string // call, final, reset, keep, roundtrip, burst
	Kind     ToolKind
	Tool     string
	Verifies bool
	Success  bool
	Burst    int
}

func genOp() *rapid.Generator[fsmOp] {
	return rapid.Custom(func(t *rapid.T) fsmOp {
		return fsmOp{
			Action:   rapid.SampledFrom([]string{"call", "call", "call", "call", "call", "final", "reset", "keep", "roundtrip", "burst"}).Draw(t, "action"),
			Kind:     rapid.SampledFrom(Kinds()).Draw(t, "kind"),
			Tool:     rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "tool"),
			Verifies: rapid.Bool().Draw(t, "verifies"),
			Success:  rapid.Bool().Draw(t, "success"),
			Burst:    rapid.IntRange(1, 5).Draw(t, "burst"),
		}
	})
}

// TestFSMProperties drives the FSM with random sequences of tool calls of
// random kinds, successes and failures, checking the invariants of docs/ASSISTANT_SAFETY.md
// after every step.
func TestFSMProperties(t *testing.T) {
	var sequences, steps atomic.Int64
	start := time.Now()
	for sequences.Load() < propSequences {
		rapid.Check(t, func(rt *rapid.T) {
			sequences.Add(1)
			f := NewFSM()
			var sh shadow
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			ops := rapid.SliceOfN(genOp(), 12, 80).Draw(rt, "ops")
			steps.Add(int64(len(ops)))
			for i, op := range ops {
				now = now.Add(time.Minute)
				stepFSM(rt, f, &sh, op, now)
				checkFSM(rt, f, &sh, i)
			}
		})
	}
	t.Logf("%d sequences, %d steps in %s", sequences.Load(), steps.Load(), time.Since(start))
}

func stepFSM(rt *rapid.T, f *FSM, sh *shadow, op fsmOp, now time.Time) {
	switch op.Action {
	case "call":
		callFSM(rt, f, sh, op, now)
	case "burst":
		before := gate(f)
		for range op.Burst {
			if f.CanExecute(KindWrite, op.Tool) == nil {
				return
			}
		}
		if after := gate(f); !equalJSON(before, after) {
			rt.Fatalf("blocked attempts changed the FSM: %+v -> %+v", before, after)
		}
	case "final":
		st, raw := f.State(), f.ReadAfterWrite()
		if f.CanFinalAnswer() == nil {
			if st == StateWriting || (st == StateVerifying && !raw) {
				rt.Fatalf("final answer allowed in %s with read_after_write=%v", st, raw)
			}
			f.CompleteVerification()
		} else if st == StateReading || st == StateResolving {
			rt.Fatalf("final answer refused in %s", st)
		}
	case "force":
		// A caller that skips the gate: BeginWrite where the gate refuses
		// is refused by the table and changes nothing.
		if f.CanExecute(KindWrite, op.Tool) != nil {
			before := gate(f)
			f.BeginWrite(op.Tool)
			if after := gate(f); !equalJSON(before, after) {
				rt.Fatalf("BeginWrite past the gate changed the FSM: %+v -> %+v", before, after)
			}
		}
	case "reset":
		f.Reset()
		*sh = shadow{}
	case "keep":
		f.ResetKeepProgress() // never waives a pending verification
		if sh.needRead && f.State() != StateVerifying {
			rt.Fatalf("ResetKeepProgress left VERIFYING with an unverified write")
		}
	case "roundtrip":
		b, err := json.Marshal(f)
		if err != nil {
			rt.Fatal(err)
		}
		g := NewFSM()
		if err := json.Unmarshal(b, g); err != nil {
			rt.Fatal(err)
		}
		if !equalJSON(f.Snapshot(), g.Snapshot()) {
			rt.Fatalf("round trip changed the FSM: %s", b)
		}
		if err := json.Unmarshal(b, f); err != nil { // continue on the restored form
			rt.Fatal(err)
		}
	}
}

func callFSM(rt *rapid.T, f *FSM, sh *shadow, op fsmOp, now time.Time) {
	before := gate(f)
	err := f.CanExecute(op.Kind, op.Tool)
	if err != nil {
		if op.Kind != KindWrite {
			rt.Fatalf("%s call blocked: %v", op.Kind, err)
		}
		if _, ok := err.(*FSMBlockedError); !ok {
			rt.Fatalf("block is %T, want *FSMBlockedError", err)
		}
		if after := gate(f); !equalJSON(before, after) {
			rt.Fatalf("a blocked attempt changed the FSM: %+v -> %+v", before, after)
		}
		return
	}
	if op.Kind == KindWrite {
		if before.State == StateResolving {
			rt.Fatalf("write admitted in RESOLVING")
		}
		if !sh.hasTarget || sh.needRead {
			rt.Fatalf("write admitted without a read since the last write (state %s)", before.State)
		}
		f.BeginWrite(op.Tool)
		if f.State() != StateWriting {
			rt.Fatalf("BeginWrite left state %s", f.State())
		}
		if f.CanExecute(KindWrite, "other") == nil {
			rt.Fatalf("second write admitted while WRITING")
		}
	}
	if op.Success {
		f.OnToolSuccessVerifies(op.Kind, op.Tool, op.Verifies, now)
	} else {
		f.OnToolFailure(op.Kind, op.Tool, now)
	}
	switch {
	case op.Kind == KindWrite:
		sh.needRead = true
	case (op.Kind == KindRead || op.Kind == KindResolve) && op.Success:
		sh.hasTarget = true
		if op.Verifies {
			sh.needRead = false // only a verifying read verifies
		}
	}
}

func checkFSM(rt *rapid.T, f *FSM, sh *shadow, i int) {
	st := f.State()
	if (st == StateResolving) != !sh.hasTarget {
		rt.Fatalf("step %d: state %s but hasTarget=%v", i, st, sh.hasTarget)
	}
	if st == StateWriting {
		rt.Fatalf("step %d: left in WRITING after the write finished", i)
	}
	if sh.needRead && (st != StateVerifying || f.ReadAfterWrite()) {
		rt.Fatalf("step %d: unverified write but state %s read_after_write=%v", i, st, f.ReadAfterWrite())
	}
	if sh.needRead && f.CanFinalAnswer() == nil {
		rt.Fatalf("step %d: final answer allowed with an unverified write", i)
	}
	if f.CanExecute(KindRead, "r") != nil || f.CanExecute(KindResolve, "r") != nil || f.CanExecute(KindUserInput, "q") != nil {
		rt.Fatalf("step %d: a read, resolve or question was blocked in %s", i, st)
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

package agent

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// fsmAt builds a machine in phase p through sanctioned events only.
func fsmAt(t *testing.T, p Phase) *FSM {
	t.Helper()
	f := NewFSM()
	steps := map[Phase][]Event{
		phResolving:  nil,
		phReading:    {EventRead},
		phWriting:    {EventRead, EventBeginWrite},
		phUnverified: {EventRead, EventBeginWrite, EventWriteDone},
		phVerified:   {EventRead, EventBeginWrite, EventWriteDone, EventVerifyingRead},
	}[p]
	for _, ev := range steps {
		if err := f.Apply(ev, "w", t0); err != nil {
			t.Fatalf("reach %s: %v", p, err)
		}
	}
	if f.phase() != p {
		t.Fatalf("reached %s, want %s", f.phase(), p)
	}
	return f
}

// TestTransitionTableIsTheMachine applies every event in every phase: a
// listed pair lands exactly where the table says, an unlisted pair is
// refused with a *TransitionError and changes nothing.
func TestTransitionTableIsTheMachine(t *testing.T) {
	for _, from := range Phases() {
		for _, ev := range Events() {
			f := fsmAt(t, from)
			before := f.Snapshot()
			err := f.Apply(ev, "w", t0.Add(time.Minute))
			want, ok := Transition(from, ev)
			if !ok {
				var te *TransitionError
				if !errors.As(err, &te) || te.From != from || te.Event != ev {
					t.Errorf("%s x %s: err %v, want a refusal", from, ev, err)
				}
				if !equalJSON(before, f.Snapshot()) {
					t.Errorf("%s x %s: refused move changed the machine", from, ev)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s x %s: %v", from, ev, err)
				continue
			}
			if want == phaseBefore {
				want = phReading // every fixture begins its write in READING
			}
			if got := f.phase(); got != want {
				t.Errorf("%s x %s -> %s, want %s", from, ev, got, want)
			}
		}
	}
}

// TestUnsanctionedMovesRefused names the moves issue 11 found admitted.
func TestUnsanctionedMovesRefused(t *testing.T) {
	for _, c := range []struct {
		from Phase
		ev   Event
	}{
		{phResolving, EventBeginWrite},
		{phWriting, EventBeginWrite},
		{phUnverified, EventBeginWrite},
		{phUnverified, EventResetKeepProgress},
		{phWriting, EventResetKeepProgress},
		{phUnverified, EventCompleteVerification},
		{phResolving, EventCancelWrite},
	} {
		if _, ok := Transition(c.from, c.ev); ok {
			t.Errorf("%s x %s is sanctioned", c.from, c.ev)
		}
	}
}

// reachable is the set of phases reachable from start using only the
// events allowed by use.
func reachable(start Phase, use func(Event) bool) []Phase {
	seen := []Phase{start}
	for i := 0; i < len(seen); i++ {
		for _, ev := range Events() {
			to, ok := Transition(seen[i], ev)
			if !ok || !use(ev) {
				continue
			}
			if to == phaseBefore {
				to = phReading
			}
			if !slices.Contains(seen, to) {
				seen = append(seen, to)
			}
		}
	}
	return seen
}

// TestEveryPhaseReachesATerminal: from every phase some sanctioned path
// reaches a phase in which the session may finish (CanFinalAnswer nil).
func TestEveryPhaseReachesATerminal(t *testing.T) {
	terminal := func(p Phase) bool {
		return p == phResolving || p == phReading || p == phVerified
	}
	for _, p := range Phases() {
		all := reachable(p, func(Event) bool { return true })
		if !slices.ContainsFunc(all, terminal) {
			t.Errorf("%s reaches no terminal phase: %v", p, all)
		}
		if terminal(p) && fsmAt(t, p).CanFinalAnswer() != nil {
			t.Errorf("%s is terminal but CanFinalAnswer refuses", p)
		}
		if !terminal(p) && fsmAt(t, p).CanFinalAnswer() == nil {
			t.Errorf("%s is not terminal but CanFinalAnswer allows", p)
		}
	}
}

// TestFixVerifiedOnlyThroughAVerifyingRead: from a write (WRITING or an
// unverified VERIFYING) no path without EventVerifyingRead reaches a phase
// in which the session may finish with the write still counted, other than
// Reset (which forgets the episode and can never report a fix).
func TestFixVerifiedOnlyThroughAVerifyingRead(t *testing.T) {
	// CancelWrite is excluded from WRITING: it means the write never ran.
	noVerify := func(ev Event) bool { return ev != EventVerifyingRead && ev != EventReset && ev != EventCancelWrite }
	for _, start := range []Phase{phWriting, phUnverified} {
		got := reachable(start, noVerify)
		for _, p := range got {
			if p == phVerified || p == phReading {
				t.Errorf("from %s, %s is reachable without a verifying read: %v", start, p, got)
			}
		}
	}
	if into := reachableInto(phVerified); !slices.Equal(into, []Event{EventVerifyingRead}) {
		t.Errorf("events entering VERIFYING(read) from elsewhere: %v", into)
	}
}

func reachableInto(p Phase) []Event {
	var out []Event
	for _, from := range Phases() {
		if from == p {
			continue
		}
		for _, ev := range Events() {
			if to, ok := Transition(from, ev); ok && to == p && !slices.Contains(out, ev) {
				out = append(out, ev)
			}
		}
	}
	return out
}

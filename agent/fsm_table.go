package agent

import "fmt"

// Event is one thing that can happen to a session state machine. Every
// method of FSM that changes it applies exactly one event through the
// transition table below; a move the table does not list is refused and
// leaves the machine unchanged.
type Event string

// Events.
const (
	// EventRead: a resolve or read that does not re-collect the target's
	// live state succeeded (for example reading patrold's own record). It
	// establishes a target but never verifies a write.
	EventRead Event = "read"
	// EventVerifyingRead: a resolve or read declared Verifies (it
	// re-collects the target's live state from the source) succeeded.
	EventVerifyingRead Event = "verifying_read"
	// EventUserInput: an operator answered; nothing changes.
	EventUserInput Event = "user_input"
	// EventBeginWrite: a write was admitted and is executing.
	EventBeginWrite Event = "begin_write"
	// EventCancelWrite: an admitted write never ran.
	EventCancelWrite Event = "cancel_write"
	// EventWriteDone: a write finished, successfully or not.
	EventWriteDone Event = "write_done"
	// EventCompleteVerification: the session finishes a verified write.
	EventCompleteVerification Event = "complete_verification"
	// EventReset: back to the start, all tracking cleared.
	EventReset Event = "reset"
	// EventResetKeepProgress: drop verification bookkeeping, keep the target.
	EventResetKeepProgress Event = "reset_keep_progress"
)

// Events lists every event in declaration order.
func Events() []Event {
	return []Event{EventRead, EventVerifyingRead, EventUserInput, EventBeginWrite, EventCancelWrite,
		EventWriteDone, EventCompleteVerification, EventReset, EventResetKeepProgress}
}

// Phase is a state refined by whether the last write has been read back:
// VERIFYING is two phases (unverified, verified); the other states are one
// each. The transition table is keyed by phase, so the guard "a read ran
// since the write" is part of the table rather than code around it.
type Phase struct {
	State          State `json:"state"`
	ReadAfterWrite bool  `json:"read_after_write"`
}

// Phases lists every phase.
func Phases() []Phase {
	return []Phase{
		{StateResolving, false}, {StateReading, false}, {StateWriting, false},
		{StateVerifying, false}, {StateVerifying, true},
	}
}

func (p Phase) String() string {
	if p == phaseBefore {
		return string(p.State)
	}
	if p.State == StateVerifying {
		if p.ReadAfterWrite {
			return "VERIFYING(read)"
		}
		return "VERIFYING(unread)"
	}
	return string(p.State)
}

var (
	phResolving  = Phase{StateResolving, false}
	phReading    = Phase{StateReading, false}
	phWriting    = Phase{StateWriting, false}
	phUnverified = Phase{StateVerifying, false}
	phVerified   = Phase{StateVerifying, true}
)

// phaseBefore marks the target of EventCancelWrite: the phase the machine
// was in when the write began ("before-write" in the manifest).
var phaseBefore = Phase{State: "before-write"}

// transitions is the whole state machine: phase x event -> phase. A pair
// that is absent is an unsanctioned move and is refused. Notable absences:
// BeginWrite in RESOLVING, WRITING or an unverified VERIFYING;
// ResetKeepProgress and CompleteVerification with a write nobody read
// back; any read in WRITING changing anything (the write's own completion
// decides). A finished write always leads to an unverified VERIFYING, from
// any phase: a write that happened must be read back, whatever preceded it.
var transitions = map[Phase]map[Event]Phase{
	phResolving: {
		EventRead: phReading, EventVerifyingRead: phReading, EventUserInput: phResolving,
		EventWriteDone: phUnverified, EventReset: phResolving, EventResetKeepProgress: phResolving,
	},
	phReading: {
		EventRead: phReading, EventVerifyingRead: phReading, EventUserInput: phReading,
		EventBeginWrite: phWriting, EventWriteDone: phUnverified,
		EventReset: phResolving, EventResetKeepProgress: phReading,
	},
	phWriting: {
		EventRead: phWriting, EventVerifyingRead: phWriting, EventUserInput: phWriting,
		EventCancelWrite: phaseBefore, EventWriteDone: phUnverified, EventReset: phResolving,
	},
	phUnverified: {
		EventRead: phUnverified, EventVerifyingRead: phVerified, EventUserInput: phUnverified,
		EventWriteDone: phUnverified, EventReset: phResolving,
	},
	phVerified: {
		EventRead: phVerified, EventVerifyingRead: phVerified, EventUserInput: phVerified,
		EventBeginWrite: phWriting, EventWriteDone: phUnverified, EventCompleteVerification: phReading,
		EventReset: phResolving, EventResetKeepProgress: phReading,
	},
}

// Transition returns the phase the table sanctions for ev in from, and
// whether the move is sanctioned at all.
func Transition(from Phase, ev Event) (Phase, bool) {
	to, ok := transitions[from][ev]
	return to, ok
}

// TransitionError is a refused move.
type TransitionError struct {
	From  Phase
	Event Event
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("fsm: %s is not allowed in %s", e.Event, e.From)
}

package agent

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// State is a session state (docs/ASSISTANT_SAFETY.md#states).
type State string

// Session states.
const (
	// StateResolving is the start: no validated target yet.
	StateResolving State = "RESOLVING"
	// StateReading means a target is known; writes may be admitted.
	StateReading State = "READING"
	// StateWriting means a write has been admitted and is executing.
	StateWriting State = "WRITING"
	// StateVerifying means a write happened (or failed) and must be verified
	// by a read or resolve before another write or a final answer.
	StateVerifying State = "VERIFYING"
)

// States returns every state in lifecycle order.
func States() []State {
	return []State{StateResolving, StateReading, StateWriting, StateVerifying}
}

// Valid reports whether s is a declared state.
func (s State) Valid() bool {
	switch s {
	case StateResolving, StateReading, StateWriting, StateVerifying:
		return true
	}
	return false
}

// FSM is the session state machine. It guarantees, whatever the model asks,
// that no write runs without a validated target, that no two writes run
// without a read between them, and that a session does not claim success
// about a write nothing has read back. It is safe for concurrent use, but the
// pipeline drives it from one goroutine so state never depends on timing.
type FSM struct {
	mu               sync.Mutex
	state            State
	beforeWrite      State // state to return to if an admitted write never ran
	readAfterWrite   bool
	wroteThisEpisode bool
	lastWriteTool    string
	lastWriteAt      time.Time
	verifyBlocks     int
	pending          map[string]PendingRecovery
	refused          int             // moves the transition table refused
	executed         map[string]bool // infrastructure writes executed this episode
}

// NewFSM returns a state machine in RESOLVING.
func NewFSM() *FSM {
	return &FSM{state: StateResolving, pending: map[string]PendingRecovery{}, executed: map[string]bool{}}
}

// lazyInit makes the zero FSM a valid one in RESOLVING (fail closed).
func (f *FSM) lazyInit() {
	if f.state == "" {
		f.state = StateResolving
	}
	if f.pending == nil {
		f.pending = map[string]PendingRecovery{}
	}
	if f.executed == nil {
		f.executed = map[string]bool{}
	}
}

// MarkExecuted records that the write named key ran (or was attempted) in
// this episode; Reset forgets it.
func (f *FSM) MarkExecuted(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lazyInit()
	f.executed[key] = true
}

// Executed reports whether the write named key already ran this episode.
func (f *FSM) Executed(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lazyInit()
	return f.executed[key]
}

func (f *FSM) executedSorted() []string {
	out := make([]string, 0, len(f.executed))
	for k := range f.executed {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// State returns the current state.
func (f *FSM) State() State {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lazyInit()
	return f.state
}

// CanExecute returns nil when a call of this kind may run now, else an
// *FSMBlockedError. Resolves, reads and operator questions are never blocked.
// A blocked write in VERIFYING increments ConsecutiveVerifyBlocks; no number
// of blocked attempts waives the rule.
func (f *FSM) CanExecute(kind ToolKind, tool string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lazyInit()
	if kind != KindWrite {
		return nil
	}
	switch f.state {
	case StateResolving:
		return f.block(kind, tool, "no validated target yet: resolve or read the target before writing")
	case StateWriting:
		return f.block(kind, tool, "another write is already executing: wait for it and read back its effect")
	case StateVerifying:
		if !f.readAfterWrite {
			f.verifyBlocks++
			return f.block(kind, tool, fmt.Sprintf("the previous write (%s) has not been verified: read the target's state before writing again", f.lastWriteTool))
		}
	}
	return nil
}

func (f *FSM) block(kind ToolKind, tool, reason string) *FSMBlockedError {
	return &FSMBlockedError{State: f.state, Tool: tool, Kind: kind, Reason: reason, Recoverable: true}
}

// phase returns the current phase. Callers hold f.mu.
func (f *FSM) phase() Phase {
	return Phase{State: f.state, ReadAfterWrite: f.state == StateVerifying && f.readAfterWrite}
}

// Apply applies one event through the transition table and returns nil,
// or a *TransitionError (leaving the machine unchanged) when the table does
// not sanction the move.
func (f *FSM) Apply(ev Event, tool string, now time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lazyInit()
	return f.applyLocked(ev, tool, now)
}

func (f *FSM) applyLocked(ev Event, tool string, now time.Time) error {
	from := f.phase()
	to, ok := Transition(from, ev)
	if !ok {
		f.refused++
		return &TransitionError{From: from, Event: ev}
	}
	if to == phaseBefore {
		to = Phase{State: f.beforeWrite, ReadAfterWrite: f.beforeWrite == StateVerifying}
		if !f.beforeWrite.Valid() || f.beforeWrite == StateWriting {
			to = phReading
		}
	}
	switch ev {
	case EventBeginWrite:
		f.beforeWrite = from.State
	case EventWriteDone:
		f.wroteThisEpisode = true
		f.lastWriteTool = tool
		f.lastWriteAt = now
		f.verifyBlocks = 0
	case EventVerifyingRead:
		if from == phUnverified {
			f.verifyBlocks = 0
		}
	case EventReset:
		f.beforeWrite = ""
		f.wroteThisEpisode = false
		f.lastWriteTool = ""
		f.lastWriteAt = time.Time{}
		f.verifyBlocks = 0
		f.pending = map[string]PendingRecovery{}
		f.executed = map[string]bool{}
	case EventResetKeepProgress:
		f.verifyBlocks = 0
		f.pending = map[string]PendingRecovery{}
	}
	f.state = to.State
	switch {
	case to.State == StateVerifying:
		f.readAfterWrite = to.ReadAfterWrite
	case ev == EventReset || ev == EventResetKeepProgress:
		f.readAfterWrite = false
	}
	return nil
}

// Refused counts moves the transition table refused (telemetry).
func (f *FSM) Refused() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused
}

// BeginWrite marks an admitted write as executing: READING (or a verified
// VERIFYING) -> WRITING. The pipeline applies it during pre-check so that a
// second write in the same batch is refused. In any other phase the move is
// refused and nothing changes (a caller cannot open a write the gate would
// refuse).
func (f *FSM) BeginWrite(tool string) {
	_ = f.Apply(EventBeginWrite, tool, time.Time{})
}

// CancelWrite undoes BeginWrite for a write that never ran (an approval is
// required, or policy refused it): WRITING -> the phase before BeginWrite.
func (f *FSM) CancelWrite() {
	_ = f.Apply(EventCancelWrite, "", time.Time{})
}

// OnToolSuccess applies a successful call. A resolve or read counts as a
// verifying read (this method cannot know better; the pipeline applies
// EventRead for tools not declared Verifies).
func (f *FSM) OnToolSuccess(kind ToolKind, tool string, now time.Time) {
	f.OnToolSuccessVerifies(kind, tool, true, now)
}

// OnToolSuccessVerifies applies a successful call; verifies says whether a
// resolve or read re-collected the target's live state (only then does it
// verify a write).
func (f *FSM) OnToolSuccessVerifies(kind ToolKind, tool string, verifies bool, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lazyInit()
	f.expire(now)
	delete(f.pending, tool)
	_ = f.applyLocked(eventFor(kind, verifies), tool, now)
}

// OnToolFailure applies a failed call. A failed write still moves to
// VERIFYING: it may have half-happened, so it must be read back too.
func (f *FSM) OnToolFailure(kind ToolKind, tool string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lazyInit()
	f.expire(now)
	if kind == KindWrite {
		_ = f.applyLocked(EventWriteDone, tool, now)
	}
}

func eventFor(kind ToolKind, verifies bool) Event {
	switch kind {
	case KindResolve, KindRead:
		if verifies {
			return EventVerifyingRead
		}
		return EventRead
	case KindUserInput:
		return EventUserInput
	}
	return EventWriteDone
}

// CanFinalAnswer returns nil when the session may finish, else an
// *FSMBlockedError: a write that has not been read back (or is still
// executing) must be verified first.
func (f *FSM) CanFinalAnswer() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lazyInit()
	switch {
	case f.state == StateWriting:
		return f.block(KindWrite, f.lastWriteTool, "a write is still executing")
	case f.state == StateVerifying && !f.readAfterWrite:
		return f.block(KindWrite, f.lastWriteTool, fmt.Sprintf("the write %s has not been verified: read the target's state before answering", f.lastWriteTool))
	}
	return nil
}

// CompleteVerification moves a verified VERIFYING to READING (keeping
// WroteThisEpisode) and reports whether it did.
func (f *FSM) CompleteVerification() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lazyInit()
	if f.phase() != phVerified {
		return false // nothing to complete (not a refused move)
	}
	return f.applyLocked(EventCompleteVerification, "", time.Time{}) == nil
}

// Reset returns to RESOLVING and clears all tracking, pending recoveries
// included.
func (f *FSM) Reset() {
	_ = f.Apply(EventReset, "", time.Time{})
}

// ResetKeepProgress drops verification bookkeeping (blocked-write counter,
// pending recoveries) and moves a verified VERIFYING to READING, keeping the
// established target and WroteThisEpisode. It never waives verification:
// with a write nobody read back (or one still executing) the move is
// refused and the machine stays where it is.
func (f *FSM) ResetKeepProgress() {
	_ = f.Apply(EventResetKeepProgress, "", time.Time{})
}

// WroteThisEpisode reports whether the session wrote (or tried to) at all.
func (f *FSM) WroteThisEpisode() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lazyInit()
	return f.wroteThisEpisode
}

// ReadAfterWrite reports whether a read or resolve succeeded since the last write.
func (f *FSM) ReadAfterWrite() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lazyInit()
	return f.readAfterWrite
}

// ConsecutiveVerifyBlocks counts writes blocked in VERIFYING since the last
// write or verifying read. Telemetry only: it never waives anything.
func (f *FSM) ConsecutiveVerifyBlocks() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lazyInit()
	return f.verifyBlocks
}

// LastWrite returns the last write's tool and time.
func (f *FSM) LastWrite() (string, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lazyInit()
	return f.lastWriteTool, f.lastWriteAt
}

package agent

import (
	"fmt"
	"sync"
	"time"
)

// State is a session state (BEHAVIOUR.md §7).
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
}

// NewFSM returns a state machine in RESOLVING.
func NewFSM() *FSM {
	return &FSM{state: StateResolving, pending: map[string]PendingRecovery{}}
}

// lazyInit makes the zero FSM a valid one in RESOLVING (fail closed).
func (f *FSM) lazyInit() {
	if f.state == "" {
		f.state = StateResolving
	}
	if f.pending == nil {
		f.pending = map[string]PendingRecovery{}
	}
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

// BeginWrite marks an admitted write as executing: READING (or a verified
// VERIFYING) -> WRITING. The pipeline applies it during pre-check so that a
// second write in the same batch is refused.
func (f *FSM) BeginWrite(tool string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lazyInit()
	if f.state != StateWriting {
		f.beforeWrite = f.state
	}
	f.state = StateWriting
}

// CancelWrite undoes BeginWrite for a write that never ran (an approval is
// required, or policy refused it): WRITING -> the state before BeginWrite.
func (f *FSM) CancelWrite() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lazyInit()
	if f.state == StateWriting && f.beforeWrite.Valid() {
		f.state = f.beforeWrite
	}
}

// OnToolSuccess applies a successful call.
func (f *FSM) OnToolSuccess(kind ToolKind, tool string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lazyInit()
	f.expire(now)
	delete(f.pending, tool)
	f.apply(kind, tool, now)
}

// OnToolFailure applies a failed call. A failed write still moves to
// VERIFYING: it may have half-happened, so it must be read back too.
func (f *FSM) OnToolFailure(kind ToolKind, tool string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lazyInit()
	f.expire(now)
	if kind == KindWrite {
		f.apply(kind, tool, now)
	}
}

func (f *FSM) apply(kind ToolKind, tool string, now time.Time) {
	switch kind {
	case KindResolve, KindRead:
		switch f.state {
		case StateResolving:
			f.state = StateReading
		case StateVerifying:
			f.readAfterWrite = true
			f.verifyBlocks = 0
		}
	case KindWrite:
		f.state = StateVerifying
		f.readAfterWrite = false
		f.wroteThisEpisode = true
		f.lastWriteTool = tool
		f.lastWriteAt = now
		f.verifyBlocks = 0
	}
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
	if f.state != StateVerifying || !f.readAfterWrite {
		return false
	}
	f.state = StateReading
	return true
}

// Reset returns to RESOLVING and clears all tracking, pending recoveries
// included.
func (f *FSM) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lazyInit()
	f.state = StateResolving
	f.beforeWrite = ""
	f.readAfterWrite = false
	f.wroteThisEpisode = false
	f.lastWriteTool = ""
	f.lastWriteAt = time.Time{}
	f.verifyBlocks = 0
	f.pending = map[string]PendingRecovery{}
}

// ResetKeepProgress drops verification tracking and moves VERIFYING (or
// WRITING) to READING, keeping the established target and WroteThisEpisode.
func (f *FSM) ResetKeepProgress() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lazyInit()
	if f.state == StateVerifying || f.state == StateWriting {
		f.state = StateReading
	}
	f.readAfterWrite = false
	f.verifyBlocks = 0
	f.pending = map[string]PendingRecovery{}
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

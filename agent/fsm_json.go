package agent

import (
	"encoding/json"
	"fmt"
	"time"
)

// FSMBlockedError is the state machine's refusal. The model receives it as a
// JSON tool result with code FSM_BLOCKED.
type FSMBlockedError struct {
	State       State    `json:"state"`
	Tool        string   `json:"tool"`
	Kind        ToolKind `json:"kind"`
	Reason      string   `json:"reason"`
	Recoverable bool     `json:"recoverable"`
}

// Code returns "FSM_BLOCKED".
func (e *FSMBlockedError) Code() string { return string(CodeFSMBlocked) }

// Error implements error.
func (e *FSMBlockedError) Error() string {
	return fmt.Sprintf("%s: %s %s refused in %s: %s", e.Code(), e.Kind, e.Tool, e.State, e.Reason)
}

// details renders the error's fields for a tool result.
func (e *FSMBlockedError) details() map[string]any {
	return map[string]any{
		"state":       string(e.State),
		"tool":        e.Tool,
		"kind":        e.Kind.String(),
		"recoverable": e.Recoverable,
	}
}

// FSMSnapshot is the persisted form of an FSM, so a session can be resumed
// (for example after an operator approval) exactly where it stopped.
type FSMSnapshot struct {
	State                   State             `json:"state"`
	BeforeWrite             State             `json:"before_write,omitempty"`
	ReadAfterWrite          bool              `json:"read_after_write"`
	WroteThisEpisode        bool              `json:"wrote_this_episode"`
	LastWriteTool           string            `json:"last_write_tool,omitempty"`
	LastWriteAt             time.Time         `json:"last_write_at,omitzero"`
	ConsecutiveVerifyBlocks int               `json:"consecutive_verify_blocks"`
	PendingRecoveries       []PendingRecovery `json:"pending_recoveries,omitempty"`
	// ExecutedWrites names the infrastructure writes already executed this
	// episode (each runs at most once per session).
	ExecutedWrites []string `json:"executed_writes,omitempty"`
}

// Validate checks a decoded snapshot, naming the offending field.
func (s FSMSnapshot) Validate() error {
	if !s.State.Valid() {
		return fmt.Errorf("state: unknown state %q", s.State)
	}
	if s.BeforeWrite != "" && (!s.BeforeWrite.Valid() || s.BeforeWrite == StateWriting) {
		return fmt.Errorf("before_write: invalid state %q", s.BeforeWrite)
	}
	if s.ConsecutiveVerifyBlocks < 0 {
		return fmt.Errorf("consecutive_verify_blocks: must not be negative, got %d", s.ConsecutiveVerifyBlocks)
	}
	if s.ReadAfterWrite && !s.WroteThisEpisode {
		return fmt.Errorf("read_after_write: true without wrote_this_episode")
	}
	if s.State == StateVerifying && !s.WroteThisEpisode {
		return fmt.Errorf("state: VERIFYING without wrote_this_episode")
	}
	done := map[string]bool{}
	for i, w := range s.ExecutedWrites {
		if w == "" {
			return fmt.Errorf("executed_writes[%d]: empty", i)
		}
		if done[w] {
			return fmt.Errorf("executed_writes[%d]: duplicate %q", i, w)
		}
		done[w] = true
	}
	if len(s.ExecutedWrites) > 0 && !s.WroteThisEpisode {
		return fmt.Errorf("executed_writes: set without wrote_this_episode")
	}
	seen := map[string]bool{}
	for i, p := range s.PendingRecoveries {
		if p.Tool == "" {
			return fmt.Errorf("pending_recoveries[%d].tool: required", i)
		}
		if seen[p.Tool] {
			return fmt.Errorf("pending_recoveries[%d].tool: duplicate %q", i, p.Tool)
		}
		seen[p.Tool] = true
	}
	return nil
}

// Snapshot returns the FSM's persisted form.
func (f *FSM) Snapshot() FSMSnapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lazyInit()
	return FSMSnapshot{
		State:                   f.state,
		BeforeWrite:             f.beforeWrite,
		ReadAfterWrite:          f.readAfterWrite,
		WroteThisEpisode:        f.wroteThisEpisode,
		LastWriteTool:           f.lastWriteTool,
		LastWriteAt:             f.lastWriteAt,
		ConsecutiveVerifyBlocks: f.verifyBlocks,
		PendingRecoveries:       f.pendingSorted(),
		ExecutedWrites:          f.executedSorted(),
	}
}

// RestoreFSM rebuilds an FSM from a snapshot after validating it.
func RestoreFSM(s FSMSnapshot) (*FSM, error) {
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("restore fsm: %w", err)
	}
	f := NewFSM()
	f.state = s.State
	f.beforeWrite = s.BeforeWrite
	f.readAfterWrite = s.ReadAfterWrite
	f.wroteThisEpisode = s.WroteThisEpisode
	f.lastWriteTool = s.LastWriteTool
	f.lastWriteAt = s.LastWriteAt
	f.verifyBlocks = s.ConsecutiveVerifyBlocks
	for _, p := range s.PendingRecoveries {
		f.pending[p.Tool] = p
	}
	for _, w := range s.ExecutedWrites {
		f.executed[w] = true
	}
	return f, nil
}

// MarshalJSON encodes the FSM as its snapshot.
func (f *FSM) MarshalJSON() ([]byte, error) {
	return json.Marshal(f.Snapshot())
}

// UnmarshalJSON decodes and validates a snapshot into f.
func (f *FSM) UnmarshalJSON(b []byte) error {
	var s FSMSnapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("decode fsm: %w", err)
	}
	g, err := RestoreFSM(s)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lazyInit()
	f.state, f.beforeWrite = g.state, g.beforeWrite
	f.readAfterWrite, f.wroteThisEpisode = g.readAfterWrite, g.wroteThisEpisode
	f.lastWriteTool, f.lastWriteAt = g.lastWriteTool, g.lastWriteAt
	f.verifyBlocks, f.pending, f.executed = g.verifyBlocks, g.pending, g.executed
	return nil
}

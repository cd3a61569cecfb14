package assistant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/store/records"
)

// Transcript is the record of one session (docs/ASSISTANT.md#transcript), stored so a
// session can be shown and replayed.
type Transcript struct {
	SessionID  string            `json:"session_id"`
	FindingID  string            `json:"finding_id"`
	Driver     contracts.Driver  `json:"driver"`
	Outcome    contracts.Outcome `json:"outcome"`
	FinalState agent.State       `json:"final_state"`
	Steps      []Step            `json:"steps"`
	// FinalAnswer is the model's final text kept as a note (figures and
	// ids no tool result of the session supports stripped), or the
	// playbook's summary. It is never the published summary.
	FinalAnswer        prompt.Text `json:"final_answer"`
	FinalAnswerBlocked int         `json:"final_answer_blocked"`
	// NoteStripped lists what was stripped from the note as ungrounded.
	NoteStripped []string `json:"note_stripped,omitempty"`
	// Escalation names why the session was escalated to an operator
	// (disclosure_withheld).
	Escalation string `json:"escalation,omitempty"`
	// Epoch is the epoch of the request the session answers; its outcome
	// carries it back (a parked session keeps it with the transcript).
	Epoch uint64 `json:"epoch,omitempty"`
}

// Step is one tool call of a transcript.
type Step struct {
	Turn        int            `json:"turn"`
	Tool        string         `json:"tool"`
	Kind        agent.ToolKind `json:"kind"`
	Status      agent.Status   `json:"status"`
	Code        agent.Code     `json:"code"`
	StateBefore agent.State    `json:"state_before"`
	StateAfter  agent.State    `json:"state_after"`
}

// States returns the states the session went through, without repeats:
// each step's state before, WRITING for an executed write, its state
// after, and the final state.
func (t *Transcript) States() []agent.State {
	var out []agent.State
	add := func(s agent.State) {
		if s != "" && (len(out) == 0 || out[len(out)-1] != s) {
			out = append(out, s)
		}
	}
	for _, st := range t.Steps {
		add(st.StateBefore)
		if st.Kind == agent.KindWrite && (st.Status == agent.StatusOK || st.Status == agent.StatusError) {
			add(agent.StateWriting)
		}
		add(st.StateAfter)
	}
	add(t.FinalState)
	return out
}

// outcomeEventID is the outcome's CloudEvents id and JetStream message id:
// derived from the stored session, so a republished outcome is a duplicate.
func outcomeEventID(r *Result) string {
	return fmt.Sprintf("%s-%d-%s", r.Transcript.SessionID, len(r.Transcript.Steps), r.Transcript.Outcome)
}

// fmtTime is a time as the store writes it, for page cursors.
func fmtTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// startSession records a session as running (a resumed session again).
func (a *Assistant) startSession(ctx context.Context, s *session) error {
	if err := a.opts.Store.StartSession(ctx, s.state.ID, s.state.FindingID, s.state.Attempt, string(s.state.Driver), s.state.StartedAt); err != nil {
		return fmt.Errorf("assistant: %w", err)
	}
	return nil
}

// saveSession stores a session's end and transcript.
func (a *Assistant) saveSession(ctx context.Context, r *Result) error {
	tj, err := json.Marshal(r.Transcript)
	if err != nil {
		return fmt.Errorf("assistant: encode transcript: %w", err)
	}
	err = a.opts.Store.FinishSession(ctx, r.Transcript.SessionID, records.SessionEnd{
		Outcome: string(r.Transcript.Outcome), Summary: r.Summary, FinishedAt: r.FinishedAt,
		Transcript: tj, Exchange: r.exchange, CostUSD: r.CostUSD,
	})
	if err != nil {
		return fmt.Errorf("assistant: %w", err)
	}
	return nil
}

// ErrSessionNotFound: no stored session has that id.
var ErrSessionNotFound = errors.New("session not found")

// Session returns a stored session: its transcript and how it ended. An
// unfinished session has an empty outcome.
func (a *Assistant) Session(ctx context.Context, id string) (*Result, error) {
	return resultFrom(a.opts.Store.Session(ctx, id))
}

// LastSession returns the most recent session for a finding's attempt.
func (a *Assistant) LastSession(ctx context.Context, findingID string, attempt int) (*Result, error) {
	return resultFrom(a.opts.Store.LastSession(ctx, findingID, attempt))
}

// resultFrom is the stored session as a Result (the transcript only once
// the session finished).
func resultFrom(rec records.SessionRecord, err error) (*Result, error) {
	if errors.Is(err, findings.ErrNotFound) {
		return nil, fmt.Errorf("assistant: %w", ErrSessionNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("assistant: %w", err)
	}
	var r Result
	r.Attempt, r.Summary = rec.Attempt, rec.Summary
	if rec.FinishedAt != nil {
		if err := json.Unmarshal([]byte(rec.Transcript), &r.Transcript); err != nil {
			return nil, fmt.Errorf("assistant: session %s: transcript: %w", rec.ID, err)
		}
		r.FinishedAt = *rec.FinishedAt
	}
	r.Transcript.SessionID, r.Transcript.FindingID = rec.ID, rec.FindingID
	r.Transcript.Driver, r.Transcript.Outcome = contracts.Driver(rec.Driver), contracts.Outcome(rec.Outcome)
	r.StartedAt = rec.StartedAt
	return &r, nil
}

// ExchangeStore holds the sessions' recorded model exchanges.
type ExchangeStore interface {
	SessionExchange(ctx context.Context, sessionID string) (string, error)
}

// ErrNoExchange: the session made no model calls, so there is nothing to replay.
var ErrNoExchange = errors.New("session made no model calls")

// SessionExchange returns the recorded model exchange of a stored session,
// to re-execute it against a replay (script.NewReplay).
func SessionExchange(ctx context.Context, st ExchangeStore, sessionID string) (model.Recording, error) {
	raw, err := st.SessionExchange(ctx, sessionID)
	if errors.Is(err, findings.ErrNotFound) {
		return model.Recording{}, fmt.Errorf("session %s: %w", sessionID, ErrSessionNotFound)
	}
	if err != nil {
		return model.Recording{}, fmt.Errorf("session %s: %w", sessionID, err)
	}
	if raw == "" {
		return model.Recording{}, fmt.Errorf("session %s: %w", sessionID, ErrNoExchange)
	}
	var rec model.Recording
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return model.Recording{}, fmt.Errorf("session %s: stored exchange: %w", sessionID, err)
	}
	return rec, nil
}

// appendExchange returns the stored exchange of a session followed by more
// (renumbered), so a session resumed after an approval keeps one recording.
func (a *Assistant) appendExchange(ctx context.Context, sessionID string, more []byte) ([]byte, error) {
	prev, err := SessionExchange(ctx, a.opts.Store, sessionID)
	if errors.Is(err, ErrNoExchange) {
		return more, nil
	}
	if err != nil {
		return nil, err
	}
	var next model.Recording
	if err := json.Unmarshal(more, &next); err != nil {
		return nil, err
	}
	for _, ex := range next.Exchanges {
		ex.Seq = len(prev.Exchanges) + 1
		prev.Exchanges = append(prev.Exchanges, ex)
	}
	return json.Marshal(prev)
}

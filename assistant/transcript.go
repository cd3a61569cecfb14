package assistant

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/model"
)

// Transcript is the record of one session (CONTRACTS.md §8), stored so a
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
	FinalAnswer        string `json:"final_answer"`
	FinalAnswerBlocked int    `json:"final_answer_blocked"`
	// NoteStripped lists what was stripped from the note as ungrounded.
	NoteStripped []string `json:"note_stripped,omitempty"`
	// Escalation names why the session was escalated to an operator
	// (disclosure_withheld).
	Escalation string `json:"escalation,omitempty"`
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

func fmtTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// startSession records a session as running (a resumed session again).
func (a *Assistant) startSession(ctx context.Context, s *session) error {
	_, err := a.opts.Store.DB().ExecContext(ctx, `INSERT INTO remediation_sessions (id, finding_id, attempt, driver, started_at)
		VALUES (?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET outcome = '', finished_at = NULL`,
		s.state.ID, s.state.FindingID, s.state.Attempt, string(s.state.Driver), fmtTime(s.state.StartedAt))
	if err != nil {
		return fmt.Errorf("assistant: record session: %w", err)
	}
	return nil
}

// saveSession stores a session's end and transcript.
func (a *Assistant) saveSession(ctx context.Context, r *Result) error {
	tj, err := json.Marshal(r.Transcript)
	if err != nil {
		return fmt.Errorf("assistant: encode transcript: %w", err)
	}
	_, err = a.opts.Store.DB().ExecContext(ctx, `UPDATE remediation_sessions SET outcome = ?, summary = ?, finished_at = ?, transcript = ?,
		exchange = CASE WHEN ? = '' THEN exchange ELSE ? END, cost_usd = cost_usd + ? WHERE id = ?`,
		string(r.Transcript.Outcome), r.Summary, fmtTime(r.FinishedAt), string(tj), string(r.exchange), string(r.exchange), r.CostUSD, r.Transcript.SessionID)
	if err != nil {
		return fmt.Errorf("assistant: store session %s: %w", r.Transcript.SessionID, err)
	}
	return nil
}

// ErrSessionNotFound: no stored session has that id.
var ErrSessionNotFound = errors.New("session not found")

// Session returns a stored session: its transcript and how it ended. An
// unfinished session has an empty outcome.
func (a *Assistant) Session(ctx context.Context, id string) (*Result, error) {
	return a.querySession(ctx, "WHERE id = ?", id)
}

// LastSession returns the most recent session for a finding's attempt.
func (a *Assistant) LastSession(ctx context.Context, findingID string, attempt int) (*Result, error) {
	return a.querySession(ctx, "WHERE finding_id = ? AND attempt = ? ORDER BY started_at DESC, id DESC LIMIT 1", findingID, attempt)
}

func (a *Assistant) querySession(ctx context.Context, where string, args ...any) (*Result, error) {
	var r Result
	var id, finding, driver, outcome, started, tj string
	var finished sql.NullString
	err := a.opts.Store.DB().QueryRowContext(ctx, `SELECT id, finding_id, attempt, driver, outcome, summary, started_at, finished_at, transcript
		FROM remediation_sessions `+where, args...).Scan(&id, &finding, &r.Attempt, &driver, &outcome, &r.Summary, &started, &finished, &tj)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("assistant: %w", ErrSessionNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("assistant: load session: %w", err)
	}
	if finished.Valid {
		if err := json.Unmarshal([]byte(tj), &r.Transcript); err != nil {
			return nil, fmt.Errorf("assistant: session %s: transcript: %w", id, err)
		}
		r.FinishedAt = parseTime(finished.String)
	}
	r.Transcript.SessionID, r.Transcript.FindingID = id, finding
	r.Transcript.Driver, r.Transcript.Outcome = contracts.Driver(driver), contracts.Outcome(outcome)
	r.StartedAt = parseTime(started)
	return &r, nil
}

// ErrNoExchange: the session made no model calls, so there is nothing to replay.
var ErrNoExchange = errors.New("session made no model calls")

// SessionExchange returns the recorded model exchange of a stored session,
// to re-execute it against a replay (script.NewReplay).
func SessionExchange(ctx context.Context, db *sql.DB, sessionID string) (model.Recording, error) {
	var raw string
	err := db.QueryRowContext(ctx, `SELECT exchange FROM remediation_sessions WHERE id = ?`, sessionID).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
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
	prev, err := SessionExchange(ctx, a.opts.Store.DB(), sessionID)
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

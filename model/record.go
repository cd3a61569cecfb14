package model

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"sync"
	"time"
)

// RecordingVersion is the format version of a Recording.
const RecordingVersion = 1

// Recording is the full model exchange of one run or session, kept with
// the run record so the run can be re-executed against a replay of it.
// It holds no secrets: requests carry no credentials and provider errors
// are redacted when they are built.
type Recording struct {
	Version   int        `json:"version"`
	Provider  string     `json:"provider"`
	Exchanges []Exchange `json:"exchanges"`
}

// Exchange is one Chat call.
type Exchange struct {
	Seq        int             `json:"seq"`
	StartedAt  time.Time       `json:"started_at"`
	DurationMS int64           `json:"duration_ms"`
	Request    RecordedRequest `json:"request"`
	Response   *Response       `json:"response,omitempty"`
	Error      *RecordedError  `json:"error,omitempty"`
}

// RecordedRequest is what was sent. The system policy is kept as a digest
// (it is the same on every turn and is not run data); tools by name.
type RecordedRequest struct {
	SystemSHA256 string    `json:"system_sha256"`
	SystemChars  int       `json:"system_chars"`
	Messages     []Message `json:"messages"`
	Tools        []string  `json:"tools,omitempty"`
	MaxTokens    int       `json:"max_tokens,omitempty"`
}

// RecordedError is a failed call.
type RecordedError struct {
	Kind    ErrorKind `json:"kind"`
	Status  int       `json:"status,omitempty"`
	Message string    `json:"message"`
}

// Recorder is a Provider wrapper that records every exchange. Create one
// per run or session. Safe for concurrent use.
type Recorder struct {
	next Provider
	now  func() time.Time

	mu        sync.Mutex
	exchanges []Exchange
}

var _ Provider = (*Recorder)(nil)

// NewRecorder wraps next; now is the clock (time.Now when nil).
func NewRecorder(next Provider, now func() time.Time) (*Recorder, error) {
	if next == nil {
		return nil, errors.New("model recorder: provider is nil")
	}
	if now == nil {
		now = time.Now
	}
	return &Recorder{next: next, now: now}, nil
}

// Name returns the wrapped provider's name.
func (r *Recorder) Name() string { return r.next.Name() }

// Chat forwards the call and records it.
func (r *Recorder) Chat(ctx context.Context, req Request) (*Response, error) {
	start := r.now()
	resp, err := r.next.Chat(ctx, req)
	ex := Exchange{
		StartedAt:  start,
		DurationMS: r.now().Sub(start).Milliseconds(),
		Request:    recordRequest(req),
	}
	if resp != nil {
		cp := cloneResponse(*resp)
		ex.Response = &cp
	}
	if err != nil {
		ex.Error = recordError(err)
	}
	r.mu.Lock()
	ex.Seq = len(r.exchanges) + 1
	r.exchanges = append(r.exchanges, ex)
	r.mu.Unlock()
	return resp, err
}

// Recording returns a copy of everything recorded so far.
func (r *Recorder) Recording() Recording {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Recording{Version: RecordingVersion, Provider: r.next.Name(), Exchanges: slices.Clone(r.exchanges)}
}

// Usage sums the usage of every recorded response.
func (rec Recording) Usage() Usage {
	var u Usage
	for _, ex := range rec.Exchanges {
		if ex.Response != nil {
			u = u.Add(ex.Response.Usage)
		}
	}
	return u
}

func recordRequest(req Request) RecordedRequest {
	sum := sha256.Sum256([]byte(req.System))
	out := RecordedRequest{
		SystemSHA256: hex.EncodeToString(sum[:]),
		SystemChars:  len(req.System),
		Messages:     make([]Message, len(req.Messages)),
		MaxTokens:    req.MaxTokens,
	}
	for i, m := range req.Messages {
		m.ToolCalls = cloneCalls(m.ToolCalls)
		out.Messages[i] = m
	}
	for _, t := range req.Tools {
		out.Tools = append(out.Tools, t.Name)
	}
	return out
}

func recordError(err error) *RecordedError {
	re := &RecordedError{Kind: KindOf(err), Message: err.Error()}
	var me *Error
	if errors.As(err, &me) {
		re.Status = me.Status
	}
	return re
}

func cloneResponse(r Response) Response {
	r.ToolCalls = cloneCalls(r.ToolCalls)
	return r
}

func cloneCalls(calls []ToolCall) []ToolCall {
	if calls == nil {
		return nil
	}
	out := make([]ToolCall, len(calls))
	for i, c := range calls {
		c.Arguments = slices.Clone(c.Arguments)
		out[i] = c
	}
	return out
}

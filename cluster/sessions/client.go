package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/bus/msgauth"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store/records"
)

// Client is assistant.Store (and assistant.RunLedger) over NATS: a worker's
// sessions, approvals and spend, kept by the writer.
type Client struct {
	nc      *nats.Conn
	prefix  string
	timeout time.Duration
	log     *slog.Logger
	auth    *msgauth.Auth // nil: calls are not signed
}

// WithAuth returns a client that signs every call with auth and accepts
// only answers the writer signed for that call.
func (c *Client) WithAuth(auth *msgauth.Auth) *Client {
	cp := *c
	cp.auth = auth
	return &cp
}

var (
	_ assistant.Store     = (*Client)(nil)
	_ assistant.RunLedger = (*Client)(nil)
)

// NewClient calls the writer on nc under prefix; timeout 0 takes
// DefaultTimeout.
func NewClient(nc *nats.Conn, prefix string, timeout time.Duration, log *slog.Logger) (*Client, error) {
	if nc == nil {
		return nil, errors.New("sessions: connection required")
	}
	if prefix == "" {
		return nil, errors.New("sessions: prefix required")
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Client{nc: nc, prefix: prefix, timeout: timeout, log: log}, nil
}

// RemoteError is an error the writer answered with.
type RemoteError struct {
	Method, Code, Description string
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("writer refused %s (%s): %s", e.Method, e.Code, e.Description)
}

// call sends a to method and decodes the answer into R.
func call[R any](ctx context.Context, c *Client, method string, a any) (R, error) {
	var zero R
	data, err := json.Marshal(a)
	if err != nil {
		return zero, fmt.Errorf("session call %s: encode: %w", method, err)
	}
	if method == contracts.SessionMethodFinishSession && int64(len(data)) > c.nc.MaxPayload() {
		// The model exchange is replay data, the largest part by far;
		// the transcript and the outcome are what must be kept.
		if f, ok := a.(finishArg); ok && len(f.End.Exchange) > 0 {
			c.log.Warn("session exchange dropped: the session end exceeds the NATS max payload", "session", f.ID,
				"bytes", len(data), "max_payload", c.nc.MaxPayload())
			f.End.Exchange = nil
			return call[R](ctx, c, method, f)
		}
	}
	if int64(len(data)) > c.nc.MaxPayload() {
		return zero, fmt.Errorf("session call %s: %d bytes exceed the NATS max payload of %d", method, len(data), c.nc.MaxPayload())
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	subject := contracts.SessionsSubject(c.prefix) + "." + method
	req := nats.NewMsg(subject)
	req.Data = data
	if c.auth != nil {
		c.auth.Sign(subject, req.Header, data)
	}
	msg, err := c.nc.RequestMsgWithContext(ctx, req)
	//mutate:session-answer-verified ./cluster/sessions ^TestForgedAnswerRefused$
	if err == nil && c.auth != nil {
		if verr := c.auth.VerifyAnswer(subject, req.Header, msg.Header, msg.Data); verr != nil {
			return zero, fmt.Errorf("session call %s: the answer is not the writer's: %w", method, verr)
		}
	}
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return zero, fmt.Errorf("session call %s: %w (subject %s)", method, ErrNoWriter, subject)
	case err != nil:
		return zero, fmt.Errorf("session call %s: %w", method, err)
	}
	if code := msg.Header.Get(micro.ErrorCodeHeader); code != "" {
		desc := msg.Header.Get(micro.ErrorHeader)
		switch code {
		case codeNotFound:
			return zero, fmt.Errorf("session call %s: %s: %w", method, desc, findings.ErrNotFound)
		case codeNotDispatched:
			return zero, fmt.Errorf("session call %s: %w", method, assistant.ErrNotDispatched)
		}
		return zero, &RemoteError{Method: method, Code: code, Description: desc}
	}
	var r R
	if err := json.Unmarshal(msg.Data, &r); err != nil {
		return zero, fmt.Errorf("session call %s: answer: %w", method, err)
	}
	return r, nil
}

func done(_ empty, err error) error { return err }

// Get returns the finding from the writer's store.
func (c *Client) Get(ctx context.Context, id string) (findings.Finding, error) {
	return call[findings.Finding](ctx, c, contracts.SessionMethodGet, idArg{ID: id})
}

// StartSession records a session as running.
func (c *Client) StartSession(ctx context.Context, id, findingID string, attempt int, driver string, startedAt time.Time) error {
	return done(call[empty](ctx, c, contracts.SessionMethodStartSession, startArg{ID: id, FindingID: findingID, Attempt: attempt, Driver: driver, StartedAt: startedAt}))
}

// FinishSession stores a session's end.
func (c *Client) FinishSession(ctx context.Context, id string, end records.SessionEnd) error {
	return done(call[empty](ctx, c, contracts.SessionMethodFinishSession, finishArg{ID: id, End: end}))
}

// Session returns one stored session.
func (c *Client) Session(ctx context.Context, id string) (records.SessionRecord, error) {
	return call[records.SessionRecord](ctx, c, contracts.SessionMethodSession, idArg{ID: id})
}

// LastSession returns the latest session of a finding's attempt.
func (c *Client) LastSession(ctx context.Context, findingID string, attempt int) (records.SessionRecord, error) {
	return call[records.SessionRecord](ctx, c, contracts.SessionMethodLastSession, lastArg{FindingID: findingID, Attempt: attempt})
}

// SessionCost is what a session spent so far.
func (c *Client) SessionCost(ctx context.Context, id string) (float64, error) {
	return call[float64](ctx, c, contracts.SessionMethodSessionCost, idArg{ID: id})
}

// SessionSpent is what sessions since since spent, except one.
func (c *Client) SessionSpent(ctx context.Context, since time.Time, except string) (float64, error) {
	return call[float64](ctx, c, contracts.SessionMethodSessionSpent, spentArg{Since: since, Except: except})
}

// RunSpent is what runs spent since since (assistant.RunLedger).
func (c *Client) RunSpent(since time.Time) (float64, error) {
	return call[float64](context.Background(), c, contracts.SessionMethodRunSpent, spentArg{Since: since})
}

// SessionExchange returns a session's recorded model exchange.
func (c *Client) SessionExchange(ctx context.Context, id string) (string, error) {
	return call[string](ctx, c, contracts.SessionMethodSessionExchange, idArg{ID: id})
}

// InsertApproval stores a pending approval.
func (c *Client) InsertApproval(ctx context.Context, ap records.ApprovalRecord) error {
	return done(call[empty](ctx, c, contracts.SessionMethodInsertApproval, toWire(ap)))
}

// Approval returns one approval.
func (c *Client) Approval(ctx context.Context, id string) (records.ApprovalRecord, error) {
	w, err := call[approvalWire](ctx, c, contracts.SessionMethodApproval, idArg{ID: id})
	return fromWire(w), err
}

// PendingApprovals pages the pending approvals.
func (c *Client) PendingApprovals(ctx context.Context, now time.Time, after []string, limit int) ([]records.ApprovalRecord, error) {
	return approvalRecords(call[[]approvalWire](ctx, c, contracts.SessionMethodPendingApprovals, pendingArg{Now: now, After: after, Limit: limit}))
}

// FindingApprovals lists a finding's approvals.
func (c *Client) FindingApprovals(ctx context.Context, findingID string) ([]records.ApprovalRecord, error) {
	return approvalRecords(call[[]approvalWire](ctx, c, contracts.SessionMethodFindingApprovals, idArg{ID: findingID}))
}

// DueApprovals lists pending approvals past their expiry.
func (c *Client) DueApprovals(ctx context.Context, now time.Time) ([]records.ApprovalRecord, error) {
	return approvalRecords(call[[]approvalWire](ctx, c, contracts.SessionMethodDueApprovals, nowArg{Now: now}))
}

// DecideApproval moves a pending approval to state.
func (c *Client) DecideApproval(ctx context.Context, id, state, actor string, now time.Time) (bool, error) {
	return call[bool](ctx, c, contracts.SessionMethodDecideApproval, decideArg{ID: id, State: state, Actor: actor, Now: now})
}

func approvalRecords(ws []approvalWire, err error) ([]records.ApprovalRecord, error) {
	if err != nil {
		return nil, err
	}
	out := make([]records.ApprovalRecord, len(ws))
	for i, w := range ws {
		out[i] = fromWire(w)
	}
	return out, nil
}

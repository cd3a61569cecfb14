// Package sessions lets an assistant worker with no database of its own
// keep its sessions in the writer's. Every call of assistant.Store (and
// the runs' spend) is a NATS request on
// `patrold_sessions.<prefix>.<method>`. A micro service on the writer
// alone serves it (queue group "patrold-writer"). So what a standalone
// worker records is committed (and replicated) exactly like what an
// in-serve worker records.
//
// Core NATS, outside the patrol stream's `<prefix>.>`: nothing is kept on
// the stream. With no writer the call fails (ErrNoWriter), the worker's
// handler returns the error and JetStream redelivers the request later.
// Nothing half-done is left behind: a session is recorded as started
// before anything runs, and its redelivery is handled by the worker.
//
// The wire is JSON per method, decoded strictly (unknown fields refused,
// the field named). Errors travel in the micro error headers: code 404 is
// findings.ErrNotFound, 400 a refused request, 401 a call that does not
// authenticate (ServeAuthenticated), 409 a session patrold did not
// dispatch (assistant.ErrNotDispatched), 500 a store failure.
package sessions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/bus/msgauth"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store/records"
)

// Defaults.
const (
	// DefaultTimeout bounds one call when the caller's context has no
	// earlier deadline.
	DefaultTimeout = 15 * time.Second
	// handleTimeout bounds one store call on the writer.
	handleTimeout = 30 * time.Second
	version       = "1.0.0"
)

// Error codes in the micro error header.
const (
	codeNotFound = "404"
	codeRefused  = "400"
	// codeUnauthenticated: the call is not signed with an accepted key,
	// altered, stale or replayed (bus/msgauth).
	codeUnauthenticated = "401"
	// codeNotDispatched: no open investigation patrold dispatched for the
	// session (assistant.ErrNotDispatched).
	codeNotDispatched = "409"
	codeFailed        = "500"
)

// ErrNoWriter: no writer answered (none elected yet, or NATS is down); the
// call was not taken, so it is safe to make again (it is
// assistant.ErrStoreUnavailable).
var ErrNoWriter = fmt.Errorf("no patrold writer answers session calls: %w", assistant.ErrStoreUnavailable)

// Backend is what the writer serves: its store.
type Backend interface {
	assistant.Store
	assistant.RunLedger
	// Dispatched reports whether patrold dispatched the finding's attempt
	// and it is still open: only such a session is recorded.
	Dispatched(ctx context.Context, findingID string, attempt int) (bool, error)
}

// Argument shapes, one per method that takes more than an id.
type (
	idArg struct {
		ID string `json:"id"`
	}
	startArg struct {
		ID        string    `json:"id"`
		FindingID string    `json:"finding_id"`
		Attempt   int       `json:"attempt"`
		Driver    string    `json:"driver"`
		StartedAt time.Time `json:"started_at"`
	}
	finishArg struct {
		ID  string             `json:"id"`
		End records.SessionEnd `json:"end"`
	}
	lastArg struct {
		FindingID string `json:"finding_id"`
		Attempt   int    `json:"attempt"`
	}
	spentArg struct {
		Since  time.Time `json:"since"`
		Except string    `json:"except"`
	}
	pendingArg struct {
		Now   time.Time `json:"now"`
		After []string  `json:"after"`
		Limit int       `json:"limit"`
	}
	nowArg struct {
		Now time.Time `json:"now"`
	}
	decideArg struct {
		ID    string    `json:"id"`
		State string    `json:"state"`
		Actor string    `json:"actor"`
		Now   time.Time `json:"now"`
	}
	empty struct{}
)

// Serve answers session calls from b until ctx ends: the writer runs it
// while it is the writer. It authenticates no call (see
// ServeAuthenticated).
func Serve(ctx context.Context, nc *nats.Conn, prefix string, b Backend, log *slog.Logger) error {
	return ServeAuthenticated(ctx, nc, prefix, b, log, nil, nil)
}

// Refused is told about every refused call: its subject and the reason
// (msgauth.Reasons).
type Refused func(subject, reason string)

// ServeAuthenticated is Serve with every call verified by auth (a call
// that does not verify is refused with code 401 and never reaches the
// store; refused, when set, counts it) and every answer signed, bound to
// its call. A nil auth verifies nothing.
func ServeAuthenticated(ctx context.Context, nc *nats.Conn, prefix string, b Backend, log *slog.Logger, auth *msgauth.Auth, refused Refused,
	opts ...Option) error {
	svc, err := micro.AddService(nc, micro.Config{Name: contracts.SessionsService, Version: version, QueueGroup: contracts.SessionsQueue,
		Description: "patrold assistant sessions, served by the writer"})
	if err != nil {
		return fmt.Errorf("session service: %w", err)
	}
	defer func() { _ = svc.Stop() }()
	g := svc.AddGroup(contracts.SessionsSubject(prefix))
	h := handlers{ctx: ctx, b: b, log: log, auth: auth, refused: refused, logged: &sync.Map{}}
	for _, o := range opts {
		o(&h)
	}
	for name, fn := range h.table() {
		if err := g.AddEndpoint(name, micro.HandlerFunc(fn)); err != nil {
			return fmt.Errorf("session service: endpoint %s: %w", name, err)
		}
	}
	<-ctx.Done()
	return nil
}

// refusedArg is an argument the service refuses (code 400).
type refusedArg struct{ error }

// An Option tunes what the session service accepts.
type Option func(*handlers)

// WithMaxCost bounds the cost one session end may record (usd > 0; the
// deployment's model.budget.per_run_usd, which bounds a session too): a
// session end claiming more is refused and records nothing.
func WithMaxCost(usd float64) Option { return func(h *handlers) { h.maxCost = usd } }

type handlers struct {
	maxCost float64 // 0: unbounded
	ctx     context.Context
	b       Backend
	log     *slog.Logger
	auth    *msgauth.Auth
	refused Refused
	logged  *sync.Map // "reason/key id": a refusal logged once per sender
}

// answer is how a handler answers: signed when calls are authenticated.
type answer struct {
	h   handlers
	req micro.Request
}

func (a answer) respond(data []byte) error {
	if a.h.auth == nil {
		return a.req.Respond(data)
	}
	hd := map[string][]string{}
	a.h.auth.SignAnswer(a.req.Subject(), a.req.Headers(), hd, data)
	return a.req.Respond(data, micro.WithHeaders(hd))
}

func (a answer) fail(code, desc string) {
	if a.h.auth == nil {
		_ = a.req.Error(code, desc, nil)
		return
	}
	hd := map[string][]string{micro.ErrorHeader: {desc}, micro.ErrorCodeHeader: {code}}
	a.h.auth.SignAnswer(a.req.Subject(), a.req.Headers(), hd, nil)
	_ = a.req.Error(code, desc, nil, micro.WithHeaders(hd))
}

// verify refuses a call that does not authenticate: counted, logged once
// per sender (its key id) and reason.
func (h handlers) verify(req micro.Request) bool {
	if h.auth == nil {
		return true
	}
	err := h.auth.Verify(req.Subject(), req.Headers(), req.Data(), h.auth.Now(), true)
	if err == nil {
		return true
	}
	reason := msgauth.Reason(err)
	if h.refused != nil {
		h.refused(req.Subject(), reason)
	}
	sender := strings.Join(req.Headers()[msgauth.HeaderKey], ",")
	if _, seen := h.logged.LoadOrStore(reason+"/"+sender, true); !seen {
		h.log.Warn("session call refused: not authenticated with the deployment key", "subject", req.Subject(), "reason", reason, "key", sender, "err", err)
	}
	_ = req.Error(codeUnauthenticated, headerSafe(err.Error()), nil)
	return false
}

func (h handlers) table() map[string]func(micro.Request) {
	b := h.b
	return map[string]func(micro.Request){
		contracts.SessionMethodGet: endpoint(h, func(ctx context.Context, a idArg) (findings.Finding, error) { return b.Get(ctx, a.ID) }),
		contracts.SessionMethodStartSession: endpoint(h, func(ctx context.Context, a startArg) (empty, error) {
			//mutate:session-start-dispatched ./cluster/sessions ^TestForgedSessionsRefused$
			if err := dispatched(ctx, b, a.FindingID, a.Attempt); err != nil {
				return empty{}, err
			}
			return empty{}, b.StartSession(ctx, a.ID, a.FindingID, a.Attempt, a.Driver, a.StartedAt)
		}),
		contracts.SessionMethodFinishSession: endpoint(h, func(ctx context.Context, a finishArg) (empty, error) {
			// Only a started session of an open dispatched investigation
			// records an end (and its spend).
			s, err := b.Session(ctx, a.ID)
			if err != nil {
				return empty{}, err
			}
			//mutate:session-finish-dispatched ./cluster/sessions ^TestForgedSessionsRefused$
			if err := dispatched(ctx, b, s.FindingID, s.Attempt); err != nil {
				return empty{}, err
			}
			//mutate:session-cost-bounded ./cluster/sessions ^TestSessionSpendCountsOnce$
			if c := a.End.CostUSD; c < 0 || h.maxCost > 0 && c > h.maxCost {
				return empty{}, refusedArg{fmt.Errorf("end.cost_usd: %g is outside 0..%g (model.budget.per_run_usd bounds one session)", c, h.maxCost)}
			}
			return empty{}, b.FinishSession(ctx, a.ID, a.End)
		}),
		contracts.SessionMethodSession: endpoint(h, func(ctx context.Context, a idArg) (records.SessionRecord, error) { return b.Session(ctx, a.ID) }),
		contracts.SessionMethodLastSession: endpoint(h, func(ctx context.Context, a lastArg) (records.SessionRecord, error) {
			return b.LastSession(ctx, a.FindingID, a.Attempt)
		}),
		contracts.SessionMethodSessionCost: endpoint(h, func(ctx context.Context, a idArg) (float64, error) { return b.SessionCost(ctx, a.ID) }),
		contracts.SessionMethodSessionSpent: endpoint(h, func(ctx context.Context, a spentArg) (float64, error) {
			return b.SessionSpent(ctx, a.Since, a.Except)
		}),
		contracts.SessionMethodRunSpent: endpoint(h, func(_ context.Context, a spentArg) (float64, error) { return b.RunSpent(a.Since) }),
		contracts.SessionMethodSessionExchange: endpoint(h, func(ctx context.Context, a idArg) (string, error) {
			return b.SessionExchange(ctx, a.ID)
		}),
		contracts.SessionMethodInsertApproval: endpoint(h, func(ctx context.Context, a approvalWire) (empty, error) {
			return empty{}, b.InsertApproval(ctx, fromWire(a))
		}),
		contracts.SessionMethodApproval: endpoint(h, func(ctx context.Context, a idArg) (approvalWire, error) {
			ap, err := b.Approval(ctx, a.ID)
			return toWire(ap), err
		}),
		contracts.SessionMethodPendingApprovals: endpoint(h, func(ctx context.Context, a pendingArg) ([]approvalWire, error) {
			return toWires(b.PendingApprovals(ctx, a.Now, a.After, a.Limit))
		}),
		contracts.SessionMethodFindingApprovals: endpoint(h, func(ctx context.Context, a idArg) ([]approvalWire, error) {
			return toWires(b.FindingApprovals(ctx, a.ID))
		}),
		contracts.SessionMethodDueApprovals: endpoint(h, func(ctx context.Context, a nowArg) ([]approvalWire, error) {
			return toWires(b.DueApprovals(ctx, a.Now))
		}),
		contracts.SessionMethodDecideApproval: endpoint(h, func(ctx context.Context, a decideArg) (bool, error) {
			return b.DecideApproval(ctx, a.ID, a.State, a.Actor, a.Now)
		}),
	}
}

// dispatched refuses (assistant.ErrNotDispatched) a session of a finding's attempt
// patrold did not dispatch or that already ended.
func dispatched(ctx context.Context, b Backend, findingID string, attempt int) error {
	ok, err := b.Dispatched(ctx, findingID, attempt)
	if err != nil {
		return err
	}
	if !ok {
		return assistant.ErrNotDispatched
	}
	return nil
}

// endpoint decodes A strictly, calls fn and answers with R or an error
// code.
func endpoint[A, R any](h handlers, fn func(context.Context, A) (R, error)) func(micro.Request) {
	return func(req micro.Request) {
		//mutate:session-call-verified ./cluster/sessions ^TestSessionCallsAuthenticated$
		if !h.verify(req) {
			return
		}
		ans := answer{h: h, req: req}
		var a A
		if err := decodeStrict(req.Data(), &a); err != nil {
			ans.fail(codeRefused, headerSafe("arguments: "+err.Error()))
			return
		}
		ctx, cancel := context.WithTimeout(h.ctx, handleTimeout)
		defer cancel()
		r, err := fn(ctx, a)
		switch {
		case errors.Is(err, findings.ErrNotFound):
			ans.fail(codeNotFound, headerSafe(err.Error()))
		case errors.Is(err, assistant.ErrNotDispatched):
			ans.fail(codeNotDispatched, headerSafe(err.Error()))
		case errors.As(err, new(refusedArg)):
			ans.fail(codeRefused, headerSafe(err.Error()))
		case err != nil:
			h.log.Warn("session call failed", "subject", req.Subject(), "err", err)
			ans.fail(codeFailed, headerSafe(err.Error()))
		default:
			data, err := json.Marshal(r)
			if err != nil {
				ans.fail(codeFailed, headerSafe("encode the answer: "+err.Error()))
				return
			}
			if err := ans.respond(data); err != nil {
				h.log.Warn("answer a session call", "subject", req.Subject(), "err", err)
			}
		}
	}
}

func decodeStrict(data []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// headerSafe keeps an error description on one header line, bounded.
func headerSafe(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, s)
	if len(s) > 512 {
		s = s[:512]
	}
	return s
}

// approvalWire carries an approval's raw JSON columns as text, so an
// empty column travels as "" (not as a JSON value it is not) and arrives
// as the same bytes the store holds.
type approvalWire struct {
	records.ApprovalRecord
	Args, FSM, Transcript, Messages string
}

func toWire(a records.ApprovalRecord) approvalWire {
	return approvalWire{ApprovalRecord: a, Args: string(a.Args), FSM: string(a.FSM), Transcript: string(a.Transcript), Messages: string(a.Messages)}
}

func fromWire(w approvalWire) records.ApprovalRecord {
	a := w.ApprovalRecord
	a.Args, a.FSM, a.Transcript, a.Messages = json.RawMessage(w.Args), json.RawMessage(w.FSM), json.RawMessage(w.Transcript), json.RawMessage(w.Messages)
	return a
}

func toWires(rs []records.ApprovalRecord, err error) ([]approvalWire, error) {
	out := make([]approvalWire, len(rs))
	for i, r := range rs {
		out[i] = toWire(r)
	}
	return out, err
}

package cluster

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/contracts"
)

// Mutation forwarding (cluster mode). A standby serves reads from its own
// database, with the replica's position in headers, and forwards every
// other request to the writer over NATS request/reply on
// contracts.ForwardSubject(prefix): core NATS, outside the patrol stream's
// `<prefix>.>`, so no stream captures it. The writer serves it through its
// own API (tokens are checked there) and answers with the response.
const (
	// ForwardQueue is the queue group forwarded requests are served in:
	// each goes to one writer, never to a deposed and a new one both.
	ForwardQueue = "patrold-writer"
	// ForwardMargin is what a standby waits beyond the writer's bound
	// (http.stream_ack_timeout) for the writer's answer to come back.
	ForwardMargin    = time.Second
	forwardMaxHeader = 64
	lagCacheFor      = 500 * time.Millisecond

	HeaderForwardedBy  = "Patrold-Forwarded-By"   // the writer that served a forwarded request
	HeaderReplicaRole  = "Patrold-Role"           // leader or standby (cluster mode)
	HeaderReplicaSeq   = "Patrold-Replica-Seq"    // state stream sequence the database applied
	HeaderReplicaLast  = "Patrold-Replica-Last"   // the state stream's last sequence
	HeaderReplicaAgeMS = "Patrold-Replica-Age-Ms" // milliseconds since the last change was applied
)

// decodeForwarded reads a forwarded request, naming the field that is wrong.
func decodeForwarded(data []byte) (*http.Request, error) {
	var f contracts.ForwardRequest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("forwarded request: %w", err)
	}
	switch {
	case f.Method == "" || strings.ContainsAny(f.Method, " \t\r\n"):
		return nil, fmt.Errorf("forwarded request: method %q is not an HTTP method", f.Method)
	case !strings.HasPrefix(f.URI, "/"):
		return nil, fmt.Errorf("forwarded request: uri %q must start with /", f.URI)
	case len(f.Header) > forwardMaxHeader:
		return nil, fmt.Errorf("forwarded request: header has %d fields, at most %d", len(f.Header), forwardMaxHeader)
	}
	r, err := http.NewRequest(f.Method, f.URI, bytes.NewReader(f.Body))
	if err != nil {
		return nil, fmt.Errorf("forwarded request: uri: %w", err)
	}
	for k, vs := range f.Header {
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	r.RemoteAddr = "nats-forward"
	return r, nil
}

// Forwarding wraps next, the API of this clustered instance: a standby
// serves reads itself (with its replica position in headers) and forwards
// every other request to the writer; the writer answers forwarded
// requests through next while it is the writer.
func (r *Member) Forwarding(next http.Handler) http.Handler {
	c := &clusterHTTP{log: r.log, next: next, nc: r.o.Bus.Conn(), subj: contracts.ForwardSubject(r.o.Bus.Prefix()),
		guard: r.o.Bus.Guard(), instance: r.instance, writer: r.o.Leadership.IsWriter, lagNow: r.Lag, timeout: ForwardBound(r.o.AnswerTimeout),
		writes: &r.writes}
	r.WhileWriter(c.serveForwarded)
	return c
}

// clusterHTTP wraps the API of a clustered instance. Forwarded requests
// and their answers are signed with the deployment key: the writer
// serves only a request that verifies, and a standby passes on only an
// answer the writer signed for its request.
type clusterHTTP struct {
	log      *slog.Logger
	next     http.Handler
	nc       *nats.Conn
	subj     string
	guard    *bus.Guard
	instance string
	writer   func() bool
	lagNow   func(context.Context) *Lag
	// timeout bounds the wait for a forwarded answer (ForwardBound).
	timeout time.Duration
	// writes is held for reading while a mutation is served as the
	// writer (Member.writes; nil: not held).
	writes *sync.RWMutex

	lagMu   sync.Mutex
	lastLag *Lag
	lagAt   time.Time
}

func (c *clusterHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	writer := c.writer()
	role := "standby"
	if writer {
		role = "leader"
	}
	w.Header().Set(HeaderReplicaRole, role)
	if writer && !servedHere(false, r) {
		// A mutation the writer serves: losing the lease meanwhile waits
		// for it before capture goes off.
		if !c.holdWrites() {
			w.Header().Set(HeaderReplicaRole, "standby")
			c.forward(w, r)
			return
		}
		defer c.releaseWrites()
	}
	if servedHere(writer, r) {
		if !writer {
			c.setLag(r.Context(), w.Header())
		}
		c.next.ServeHTTP(w, r)
		return
	}
	c.forward(w, r)
}

// holdWrites holds writes for a mutation served as the writer, and says
// whether this instance still is the writer once it holds them (a
// demote may have run meanwhile).
func (c *clusterHTTP) holdWrites() bool {
	if c.writes == nil {
		return c.writer()
	}
	c.writes.RLock()
	if c.writer() {
		return true
	}
	c.writes.RUnlock()
	return false
}

func (c *clusterHTTP) releaseWrites() {
	if c.writes != nil {
		c.writes.RUnlock()
	}
}

// servedHere reports whether this instance answers r itself: the writer
// answers everything; a standby answers reads and its own `/-/` routes.
// `POST /-/reload` goes to the writer: it writes an audit row, and only
// the writer writes (docs/CLUSTER.md "Reads and mutations on a standby").
func servedHere(writer bool, r *http.Request) bool {
	return writer || api.ReadOnly(r.Method) || strings.HasPrefix(r.URL.Path, "/-/") && r.URL.Path != "/-/reload"
}

func (c *clusterHTTP) setLag(ctx context.Context, h http.Header) {
	c.lagMu.Lock()
	defer c.lagMu.Unlock()
	if c.lastLag == nil || time.Since(c.lagAt) > lagCacheFor {
		lctx, cancel := context.WithTimeout(ctx, time.Second)
		c.lastLag = c.lagNow(lctx)
		cancel()
		c.lagAt = time.Now()
	}
	if c.lastLag == nil {
		return
	}
	h.Set(HeaderReplicaSeq, strconv.FormatUint(c.lastLag.AppliedSeq, 10))
	if c.lastLag.StreamError == "" { // unknown: not said at all
		h.Set(HeaderReplicaLast, strconv.FormatUint(c.lastLag.LastSeq, 10))
	}
	if c.lastLag.AppliedAt != nil {
		h.Set(HeaderReplicaAgeMS, strconv.FormatInt(time.Since(*c.lastLag.AppliedAt).Milliseconds(), 10))
	}
}

func (c *clusterHTTP) forward(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		writeAPIError(w, http.StatusRequestEntityTooLarge, api.CodeInvalidRequest, "request body too large to forward to the leader", nil)
		return
	}
	data, err := json.Marshal(contracts.ForwardRequest{Method: r.Method, URI: r.URL.RequestURI(), Header: r.Header, Body: body})
	if err != nil {
		writeAPIError(w, http.StatusInternalServerError, api.CodeInternal, err.Error(), nil)
		return
	}
	timeout := cmp.Or(c.timeout, ForwardBound(0))
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	req := nats.NewMsg(c.subj)
	req.Data = data
	c.guard.Sign(req)
	msg, err := c.nc.RequestMsgWithContext(ctx, req)
	if err == nil {
		//mutate:forward-answer-verified ./cluster ^TestForwardedMutationsAuthenticated$
		if verr := c.guard.CheckAnswer(contracts.StemForward, req, msg); verr != nil {
			writeAPIError(w, http.StatusBadGateway, api.CodeInternal, "the leader's answer is not authenticated with the deployment key: "+verr.Error(), nil)
			return
		}
	}
	if err != nil {
		c.log.Warn("forward to the leader failed", "method", r.Method, "path", r.URL.Path, "err", err)
		msg, details := "this instance is a standby and no leader answered: "+err.Error(), map[string]any{"role": "standby"}
		if !errors.Is(err, nats.ErrNoResponders) {
			// The request may have reached a writer that could not answer
			// in time: the change may be applied.
			msg = fmt.Sprintf("this instance is a standby and the leader did not answer within %s (%v): "+
				"read the object back once the cluster has a writer before repeating the request", timeout, err)
			details["forwarded"] = true
		}
		writeAPIError(w, http.StatusServiceUnavailable, api.CodeNotReady, msg, details)
		return
	}
	var resp contracts.ForwardResponse
	if err := json.Unmarshal(msg.Data, &resp); err != nil || resp.Status < 100 || resp.Status > 999 {
		writeAPIError(w, http.StatusBadGateway, api.CodeInternal, fmt.Sprintf("leader's answer is not a forwarded response (status %d, %v)", resp.Status, err), nil)
		return
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
}

// serveForwarded answers forwarded requests while this instance is the
// writer (until ctx ends).
func (c *clusterHTTP) serveForwarded(ctx context.Context) {
	// One writer serves each request (a queue group). Each is served on
	// its own goroutine: a held answer must not delay the next request.
	// (An empty queue would be a plain subscription.)
	queue := ""
	//mutate:forward-queue-group ./cluster ^TestForwardedRequestServedOnce
	queue = ForwardQueue
	sub, err := c.nc.QueueSubscribe(c.subj, queue, func(m *nats.Msg) { go c.serveOne(ctx, m) })
	if err != nil {
		c.log.Error("serve forwarded requests", "err", err)
		return
	}
	<-ctx.Done()
	_ = sub.Unsubscribe()
}

// serveOne answers one forwarded request.
func (c *clusterHTTP) serveOne(ctx context.Context, m *nats.Msg) {
	var resp contracts.ForwardResponse
	r, err := decodeForwarded(m.Data)
	rec := api.NewRecorder()
	//mutate:forward-request-verified ./cluster ^TestForwardedMutationsAuthenticated$
	if verr := c.guard.CheckNow(contracts.StemForward, m); verr != nil {
		// Never served: what the request would change stays as it was.
		writeAPIError(rec, http.StatusUnauthorized, api.CodeUnauthorized, "forwarded request refused: "+verr.Error(), nil)
	} else if err != nil {
		writeAPIError(rec, http.StatusBadRequest, api.CodeInvalidRequest, err.Error(), nil)
	} else {
		// The writer's own API answers, a success only once the
		// change is on the stream (api.DurableAnswers).
		c.serveAsWriter(ctx, rec, r)
		//mutate:forward-deposed-503 ./cluster ^TestForwardedRequestCutByLeaseLoss$
		if ctx.Err() != nil && rec.Code() >= http.StatusInternalServerError && rec.Code() != http.StatusServiceUnavailable {
			// Losing the lease cancelled the request half-way: a failover,
			// which the caller sees as one (a 503 with a code), not a 500.
			rec = api.NewRecorder()
			writeAPIError(rec, http.StatusServiceUnavailable, api.CodeNotReady, "the writer stopped being the writer while serving this request: "+
				"read the object back once the cluster has a writer before repeating it", map[string]any{"role": "standby", "forwarded": true})
		}
		rec.Header().Set(HeaderForwardedBy, c.instance)
	}
	resp = contracts.ForwardResponse{Status: rec.Code(), Header: rec.Header(), Body: rec.Body.Bytes()}
	data, _ := json.Marshal(resp)
	ans := &nats.Msg{Subject: m.Reply, Data: data}
	c.guard.SignAnswer(m, ans)
	if err := m.RespondMsg(ans); err != nil {
		c.log.Warn("answer a forwarded request", "err", err)
	}
}

// serveAsWriter serves a forwarded request holding writes; one that
// finds this instance no longer the writer is not served.
func (c *clusterHTTP) serveAsWriter(ctx context.Context, rec *api.Recorder, r *http.Request) {
	if !c.holdWrites() {
		writeAPIError(rec, http.StatusServiceUnavailable, api.CodeNotReady, "this instance stopped being the writer before serving the request: "+
			"nothing was done; repeat it", map[string]any{"role": "standby"})
		return
	}
	defer c.releaseWrites()
	c.next.ServeHTTP(rec, r.WithContext(ctx))
}

// ForwardBound is how long a standby waits for a forwarded answer: the
// writer's own bound on a held answer (http.stream_ack_timeout; 0: its
// default) and ForwardMargin.
func ForwardBound(answerTimeout time.Duration) time.Duration {
	return cmp.Or(answerTimeout, api.DefaultStreamAckTimeout) + ForwardMargin
}

func writeAPIError(w http.ResponseWriter, status int, code api.Code, msg string, details map[string]any) {
	if details == nil {
		details = map[string]any{}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(api.Error{Code: code, Message: msg, Details: details})
}

package cluster

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/bus/embedded/natstest"
	"github.com/patrold/patrold/bus/msgauth"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/internal/testkit"
)

// forwardFixture is a NATS server, a standby and the guard every
// instance signs with.
type forwardFixture struct {
	conn  func() *nats.Conn
	guard func() *bus.Guard
	subj  string
}

func newForwardFixture(t *testing.T) forwardFixture {
	srv := natstest.Server(t)
	keys, err := msgauth.LoadFile(testkit.KeyFile(t))
	if err != nil {
		t.Fatal(err)
	}
	return forwardFixture{
		conn: func() *nats.Conn {
			nc, err := nats.Connect(srv.ClientURL())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(nc.Close)
			return nc
		},
		guard: func() *bus.Guard {
			g, err := bus.NewGuard(forwardAuth(t, keys, nil), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			return g
		},
		subj: contracts.ForwardSubject("patrol"),
	}
}

// writer starts serving forwarded requests through h as instance name.
func (f forwardFixture) writer(t *testing.T, ctx context.Context, name string, h http.Handler) *clusterHTTP {
	w := &clusterHTTP{log: slog.New(slog.DiscardHandler), next: h, nc: f.conn(), subj: f.subj, guard: f.guard(), instance: name,
		writer: func() bool { return true }}
	go w.serveForwarded(ctx)
	testkit.Eventually(t, 5*time.Second, name+" serves forwarded requests", func() bool {
		return w.nc.NumSubscriptions() == 1 && w.nc.Flush() == nil
	})
	return w
}

func (f forwardFixture) standby(timeout time.Duration) *clusterHTTP {
	return &clusterHTTP{log: slog.New(slog.DiscardHandler), nc: f.conn(), subj: f.subj, guard: f.guard(), writer: func() bool { return false },
		timeout: timeout}
}

// TestForwardedRequestServedOnce: a deposed writer still subscribed and
// the new one both listen on the forward subject; each forwarded
// request is served by one of them, never by both (a change applied
// twice, one of the answers a 500 for an applied change).
func TestForwardedRequestServedOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newForwardFixture(t)
	var served atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		served.Add(1)
		w.WriteHeader(http.StatusOK)
	})
	f.writer(t, ctx, "old", h)
	f.writer(t, ctx, "new", h)
	s := f.standby(0)
	const n = 20
	for i := range n {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/silences", strings.NewReader("{}")))
		if rec.Code != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	if got := served.Load(); got != n {
		t.Fatalf("%d forwarded requests served %d times, want %d", n, got, n)
	}
}

// TestForwardedAnswerIsBounded: a writer that holds its answer beyond
// the bound (its stream does not answer) leaves the standby's caller
// with a 503 not_ready naming the wait, after http.stream_ack_timeout
// and the margin, never 30 s; with no writer at all the 503 comes at
// once.
func TestForwardedAnswerIsBounded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newForwardFixture(t)
	s := f.standby(ForwardBound(200 * time.Millisecond))

	start := time.Now()
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/silences", strings.NewReader("{}")))
	var e api.Error
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || rec.Code != http.StatusServiceUnavailable || e.Code != api.CodeNotReady ||
		e.Details["role"] != "standby" || e.Details["forwarded"] != nil {
		t.Fatalf("no writer: %d %s", rec.Code, rec.Body)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("no writer: the 503 took %s", took)
	}

	release := make(chan struct{})
	defer close(release)
	f.writer(t, ctx, "w", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		<-release
		w.WriteHeader(http.StatusOK)
	}))
	start = time.Now()
	rec = httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/silences", strings.NewReader("{}")))
	took := time.Since(start)
	e = api.Error{}
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || rec.Code != http.StatusServiceUnavailable || e.Code != api.CodeNotReady ||
		e.Details["role"] != "standby" || e.Details["forwarded"] != true || !strings.Contains(e.Message, "did not answer within 1.2s") {
		t.Fatalf("held answer: %d %s", rec.Code, rec.Body)
	}
	if bound := ForwardBound(200 * time.Millisecond); took < bound || took > bound+time.Second {
		t.Fatalf("held answer: the 503 took %s, want about %s", took, bound)
	}
}

// TestForwardedRequestCutByLeaseLoss: the writer loses its lease while
// it serves a forwarded request, which cancels the request's work (the
// partition test saw "add silence: context canceled" answered 500). The
// caller gets a 503 not_ready with a code, saying the request reached a
// writer, never a 500.
func TestForwardedRequestCutByLeaseLoss(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newForwardFixture(t)
	s := f.standby(0)
	started := make(chan struct{})
	f.writer(t, ctx, "w", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"error":"internal","message":"internal error"}`))
	}))
	go func() { <-started; cancel() }() // the lease is lost
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/silences", strings.NewReader("{}")))
	var e api.Error
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("answer %d %s, want 503 (%v)", rec.Code, rec.Body, err)
	}
	want := api.Error{Code: api.CodeNotReady, Message: "the writer stopped being the writer while serving this request: " +
		"read the object back once the cluster has a writer before repeating it", Details: map[string]any{"role": "standby", "forwarded": true}}
	if !reflect.DeepEqual(e, want) {
		t.Fatalf("answer %+v, want %+v", e, want)
	}
	if by := rec.Header().Get(HeaderForwardedBy); by != "w" {
		t.Fatalf("%s: %q, want w", HeaderForwardedBy, by)
	}
}

// TestStreamAckTimeoutMessageStatesTheForwardBound: the configuration
// error for http.stream_ack_timeout states how long a standby really
// waits for a forwarded answer (the timeout and ForwardMargin).
func TestStreamAckTimeoutMessageStatesTheForwardBound(t *testing.T) {
	c := api.DefaultHTTPConfig()
	c.StreamAckTimeout = api.MaxStreamAckTimeout + time.Second
	err := c.Validate()
	want := "http.stream_ack_timeout: must be above 0 and at most 20s (a standby waits this long and " + ForwardMargin.String() +
		" more for a forwarded answer), got 21s"
	if err == nil || err.Error() != want {
		t.Fatalf("Validate = %v, want %s", err, want)
	}
	if got := ForwardBound(api.MaxStreamAckTimeout); got != api.MaxStreamAckTimeout+ForwardMargin {
		t.Fatalf("ForwardBound(%s) = %s", api.MaxStreamAckTimeout, got)
	}
}

package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// http.stream_ack_timeout's default and bound. A standby waits this
// long and cluster.ForwardMargin more for a forwarded answer, so the
// bound caps every request a client can be kept waiting
// (docs/CLUSTER.md).
const (
	DefaultStreamAckTimeout = 5 * time.Second
	MaxStreamAckTimeout     = 20 * time.Second
)

// DurableOptions configure DurableAnswers.
type DurableOptions struct {
	// Track returns a context under which every store commit is noted,
	// and a func giving the last outbox row those commits wrote (0:
	// none).
	Track func(context.Context) (context.Context, func() int64)
	// Wait returns nil once the stream holds every outbox row up to seq.
	Wait func(ctx context.Context, seq int64) error
	// Writer reports whether this instance is the cluster's writer.
	Writer func() bool
	// Timeout bounds Wait (0: DefaultStreamAckTimeout).
	Timeout time.Duration
	Logger  *slog.Logger
	// Registerer receives the answer metrics (nil: a private registry).
	Registerer prometheus.Registerer
}

// durableMetrics count what DurableAnswers held back.
type durableMetrics struct {
	wait       prometheus.Histogram
	notDurable *prometheus.CounterVec
}

func newDurableMetrics(reg prometheus.Registerer) (*durableMetrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &durableMetrics{
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "patrold_api_stream_ack_wait_seconds",
			Help:    "Cluster mode: how long a mutation's answer waited for the stream to store its change.",
			Buckets: []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 20},
		}),
		notDurable: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "patrold_api_not_durable_total",
			Help: "Cluster mode: mutations answered 503 not_durable, by whether the change is still on its way to the stream.",
		}, []string{"will_publish"}),
	}
	for _, c := range []prometheus.Collector{m.wait, m.notDurable} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.notDurable.WithLabelValues("true")
	m.notDurable.WithLabelValues("false")
	return m, nil
}

// DurableAnswers wraps the API of a clustered instance so that a
// mutation is answered with success only once its change is on the
// stream (docs/CLUSTER.md#answered-actions). Rules:
//   - reads (GET, HEAD, OPTIONS) and the instance's own /-/ routes pass;
//   - a mutation's answer is held back until the stream acknowledged
//     the last outbox row its commits wrote;
//   - an answer of 400 or more is sent as it is (it claims no change);
//   - no acknowledgement within Timeout, or this instance no longer the
//     writer, turns a success into 503 not_durable, which says the
//     change is committed here and whether it is on its way.
func DurableAnswers(next http.Handler, o DurableOptions) (http.Handler, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultStreamAckTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	m, err := newDurableMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ReadOnly(r.Method) || strings.HasPrefix(r.URL.Path, "/-/") {
			next.ServeHTTP(w, r)
			return
		}
		ctx, last := o.Track(r.Context())
		rec := NewRecorder()
		next.ServeHTTP(rec, r.WithContext(ctx))
		if rec.Code() >= http.StatusBadRequest {
			rec.CopyTo(w)
			return
		}
		seq := last()
		var err error
		if seq > 0 && o.Writer() {
			wctx, cancel := context.WithTimeout(r.Context(), o.Timeout)
			start := time.Now()
			err = o.Wait(wctx, seq)
			m.wait.Observe(time.Since(start).Seconds())
			cancel()
		}
		switch {
		case err != nil:
			o.Logger.Warn("answered 503: the change is committed here but not on the stream", "method", r.Method, "path", r.URL.Path,
				"outbox_seq", seq, "err", err)
			m.notDurable.WithLabelValues("true").Inc()
			writeNotDurable(w, rec, seq, true, fmt.Sprintf("the change is committed on this instance, but the stream did not store it within %s (%v): "+
				"it is published once the stream answers, and lost if this instance fails first. Read it back (GET) before you rely on it; "+
				"repeat the request if it is missing", o.Timeout, err))
		//mutate:answer-refused-when-deposed ./api ^TestDurableAnswersHoldSuccessUntilStored$
		case !o.Writer():
			o.Logger.Warn("answered 503: this instance stopped being the writer while answering", "method", r.Method, "path", r.URL.Path, "outbox_seq", seq)
			m.notDurable.WithLabelValues("false").Inc()
			writeNotDurable(w, rec, seq, false, "this instance stopped being the writer while answering: the change may be committed "+
				"only here, and the new writer does not apply it. Read it back (GET) and repeat the request if it is missing")
		default:
			rec.CopyTo(w)
		}
	}), nil
}

// writeNotDurable answers 503 not_durable for the success rec held.
// Details: the answer that was held back (when JSON), its status, the
// outbox row waited for and whether it is still on its way.
func writeNotDurable(w http.ResponseWriter, rec *Recorder, seq int64, pending bool, msg string) {
	e := newError(CodeNotDurable, "%s", msg).with("status", rec.Code()).with("outbox_seq", seq).with("will_publish", pending)
	if body := rec.Body.Bytes(); json.Valid(body) {
		e = e.with("answer", json.RawMessage(body))
	}
	writeJSON(w, e.Status, e)
}

// ReadOnly reports whether method is one that changes nothing (GET,
// HEAD, OPTIONS).
func ReadOnly(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

// Recorder is a ResponseWriter kept in memory, for an answer sent
// later (or elsewhere: a forwarded request's).
type Recorder struct {
	Status int
	header http.Header
	Body   bytes.Buffer
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{header: http.Header{}} }

// Header is the answer's header.
func (r *Recorder) Header() http.Header { return r.header }

// WriteHeader keeps the first status.
func (r *Recorder) WriteHeader(code int) {
	if r.Status == 0 {
		r.Status = code
	}
}

// Write keeps p (status 200 unless one was written).
func (r *Recorder) Write(p []byte) (int, error) {
	if r.Status == 0 {
		r.Status = http.StatusOK
	}
	return r.Body.Write(p)
}

// Code is the status, 200 when none was written.
func (r *Recorder) Code() int {
	if r.Status == 0 {
		return http.StatusOK
	}
	return r.Status
}

// CopyTo sends the kept answer to w.
func (r *Recorder) CopyTo(w http.ResponseWriter) {
	h := w.Header()
	for k, vs := range r.header {
		h[k] = vs
	}
	w.WriteHeader(r.Code())
	_, _ = w.Write(r.Body.Bytes())
}

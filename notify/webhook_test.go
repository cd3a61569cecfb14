package notify

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
)

// hit is one request the loopback receiver saw.
type hit struct {
	EventID   string
	Attempt   int
	SignedOK  bool
	Status    int
	Body      string
	Received  time.Time
	Signature string
}

// receiver is a loopback webhook endpoint that fails the first fails[id]
// requests of an event with 500 and records every request.
type receiver struct {
	t      *testing.T
	secret []byte
	mu     sync.Mutex
	fails  map[string]int
	hits   []hit
	srv    *httptest.Server
}

func newReceiver(t *testing.T, secret string, fails map[string]int) *receiver {
	r := &receiver{t: t, secret: []byte(secret), fails: fails}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		id := req.Header.Get(HeaderEventID)
		attempt, _ := strconv.Atoi(req.Header.Get(HeaderAttempt))
		r.mu.Lock()
		defer r.mu.Unlock()
		status := http.StatusNoContent
		if r.fails[id] > 0 {
			r.fails[id]--
			status = http.StatusInternalServerError
		}
		r.hits = append(r.hits, hit{EventID: id, Attempt: attempt, SignedOK: Verify(r.secret, body, req.Header.Get(HeaderSignature)),
			Status: status, Body: string(body), Received: time.Now(), Signature: req.Header.Get(HeaderSignature)})
		w.WriteHeader(status)
		fmt.Fprint(w, "receiver says ", status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) snapshot() []hit {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.hits)
}

// attempts returns, per event id, the attempts and statuses seen.
func (r *receiver) attempts() map[string][]string {
	out := map[string][]string{}
	for _, h := range r.snapshot() {
		out[h.EventID] = append(out[h.EventID], fmt.Sprintf("%d:%d", h.Attempt, h.Status))
	}
	return out
}

func TestWebhookSignsRetriesWithBackoffAndFilters(t *testing.T) {
	b := startBus(t)
	const secret = "s3cret-hook-key"
	rec := newReceiver(t, secret, map[string]int{"ev-flaky": 2})
	reg := prometheus.NewRegistry()
	opts := Options{Sinks: []SinkOptions{{Name: "chat", Kind: KindWebhook, Backoff: 150 * time.Millisecond, MaxBackoff: time.Second,
		MaxDeliver: 5, Webhook: WebhookOptions{URL: rec.srv.URL, SecretFile: writeFile(t, "hook.secret", secret+"\n"),
			Subjects: []string{"patrol.findings.*.critical"}}}}}
	startRunner(t, b, opts, reg, time.Now)

	now := time.Now().UTC()
	warn := testFinding("vm/101", "vm", findings.CategoryPerformance, "high_memory", findings.SeverityWarning)
	crit := testFinding("storage/pve1/local-zfs", "storage", findings.CategoryCapacity, "high_disk", findings.SeverityCritical)
	node := testFinding("node/pve2", "node", findings.CategoryPerformance, "high_cpu", findings.SeverityCritical)
	publish(t, b, findingRow(t, "ev-warn", "opened", warn, now))
	flakyBody := publish(t, b, findingRow(t, "ev-flaky", "opened", crit, now))
	publish(t, b, findingRow(t, "ev-runs", "opened", warn, now)) // warning: filtered out too
	critBody := publish(t, b, findingRow(t, "ev-crit", "resolved", node, now))

	want := map[string][]string{"ev-flaky": {"1:500", "2:500", "3:204"}, "ev-crit": {"1:204"}}
	testkit.EventuallyState(t, 10*time.Second, "deliveries", func() (bool, string) {
		got := rec.attempts()
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprint(got)
	})
	hits := rec.snapshot()
	bodies := map[string]string{"ev-flaky": string(flakyBody), "ev-crit": string(critBody)}
	var flaky []time.Time
	for _, h := range hits {
		if !h.SignedOK || h.Signature != Sign([]byte(secret), []byte(h.Body)) {
			t.Errorf("%s attempt %d: signature %q does not verify", h.EventID, h.Attempt, h.Signature)
		}
		if h.Body != bodies[h.EventID] {
			t.Errorf("%s: body is not the published envelope:\n%s\nwant\n%s", h.EventID, h.Body, bodies[h.EventID])
		}
		if Verify([]byte("other key"), []byte(h.Body), h.Signature) {
			t.Errorf("%s: the signature verifies under another key", h.EventID)
		}
		if h.EventID == "ev-flaky" {
			flaky = append(flaky, h.Received)
		}
	}
	// backoff: 150ms before the second attempt, 300ms before the third
	for i, min := range []time.Duration{150 * time.Millisecond, 300 * time.Millisecond} {
		if gap := flaky[i+1].Sub(flaky[i]); gap < min {
			t.Errorf("retry %d came after %s, before the backoff %s", i+1, gap, min)
		}
	}
	testkit.EventuallyState(t, 10*time.Second, "metrics", func() (bool, string) {
		return metricsMatch(reg, `
# HELP patrold_notify_sent_total Events a sink accepted (acknowledged on its consumer).
# TYPE patrold_notify_sent_total counter
patrold_notify_sent_total{sink="chat"} 2
# HELP patrold_notify_failed_total Delivery attempts that failed; the event is redelivered with backoff or dead-lettered.
# TYPE patrold_notify_failed_total counter
patrold_notify_failed_total{sink="chat"} 2
# HELP patrold_notify_dead_letters_total Events given up after max_deliver failed deliveries, or that do not decode.
# TYPE patrold_notify_dead_letters_total counter
patrold_notify_dead_letters_total{sink="chat"} 0
# HELP patrold_notify_lag_messages Events on the stream the sink has not acknowledged yet (pending plus in delivery).
# TYPE patrold_notify_lag_messages gauge
patrold_notify_lag_messages{sink="chat"} 0
`, "patrold_notify_sent_total", "patrold_notify_failed_total", "patrold_notify_dead_letters_total", "patrold_notify_lag_messages")
	})
}

func TestWebhookDeadLettersAfterMaxDeliver(t *testing.T) {
	b := startBus(t)
	rec := newReceiver(t, "", map[string]int{"ev-dead": 1000})
	reg := prometheus.NewRegistry()
	opts := Options{Sinks: []SinkOptions{{Name: "hook", Kind: KindWebhook, Backoff: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		MaxDeliver: 3, Webhook: WebhookOptions{URL: rec.srv.URL}}}}
	startRunner(t, b, opts, reg, time.Now)
	f := testFinding("vm/101", "vm", findings.CategoryPerformance, "high_memory", findings.SeverityWarning)
	now := time.Now().UTC()
	publish(t, b, findingRow(t, "ev-dead", "opened", f, now))
	publishRaw(t, b, "patrol.findings.opened.warning", []byte(`{"not": "an envelope"`))
	publish(t, b, findingRow(t, "ev-after", "repeated", f, now))

	want := map[string][]string{"ev-dead": {"1:500", "2:500", "3:500"}, "ev-after": {"1:204"}}
	testkit.EventuallyState(t, 10*time.Second, "deliveries", func() (bool, string) {
		got := rec.attempts()
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprint(got)
	})
	for _, h := range rec.snapshot() {
		if h.Signature != "" {
			t.Errorf("%s: signed without a secret: %q", h.EventID, h.Signature)
		}
	}
	testkit.EventuallyState(t, 10*time.Second, "metrics", func() (bool, string) {
		return metricsMatch(reg, `
# HELP patrold_notify_sent_total Events a sink accepted (acknowledged on its consumer).
# TYPE patrold_notify_sent_total counter
patrold_notify_sent_total{sink="hook"} 1
# HELP patrold_notify_failed_total Delivery attempts that failed; the event is redelivered with backoff or dead-lettered.
# TYPE patrold_notify_failed_total counter
patrold_notify_failed_total{sink="hook"} 3
# HELP patrold_notify_dead_letters_total Events given up after max_deliver failed deliveries, or that do not decode.
# TYPE patrold_notify_dead_letters_total counter
patrold_notify_dead_letters_total{sink="hook"} 2
`, "patrold_notify_sent_total", "patrold_notify_failed_total", "patrold_notify_dead_letters_total")
	})
}

func TestWebhookSecretFileErrors(t *testing.T) {
	b := startBus(t)
	for name, c := range map[string]struct{ file, want string }{
		"missing": {"/nonexistent/hook.secret", "notify.sinks[0].webhook.secret_file: open /nonexistent/hook.secret: no such file or directory"},
		"empty":   {writeFile(t, "empty.secret", " \n"), "notify.sinks[0].webhook.secret_file: %s is empty"},
	} {
		_, err := New(RunnerOptions{JetStream: b.JetStream(), Prefix: testPrefix, Options: Options{Sinks: []SinkOptions{
			{Name: "h", Kind: KindWebhook, Webhook: WebhookOptions{URL: "http://127.0.0.1:1/", SecretFile: c.file}}}}})
		want := c.want
		if name == "empty" {
			want = fmt.Sprintf(c.want, c.file)
		}
		if err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %s", name, err, want)
		}
	}
}

// TestWebhookErrorsHideTheURL: the hook URL's path and query (often the
// credential) never reach an error, and so never a log line.
func TestWebhookErrorsHideTheURL(t *testing.T) {
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "nope", http.StatusForbidden)
	}))
	defer refusing.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	for _, c := range []struct{ base, want string }{
		{refusing.URL, "webhook " + refusing.URL + "/<hidden>: HTTP 403: nope"},
		{downURL, "webhook " + downURL + "/<hidden>: dial tcp " + downURL[len("http://"):] + ": connect: connection refused"},
	} {
		w := &webhookSink{opts: SinkOptions{Webhook: WebhookOptions{URL: c.base + "/services/T0/secret-token?sig=abc", Timeout: 5 * time.Second}}, client: &http.Client{}}
		err := w.send(t.Context(), []byte(`{}`), "ev-1", 1)
		if err == nil || err.Error() != c.want {
			t.Errorf("got %v\nwant %s", err, c.want)
		}
	}
}

// TestSinkDownLosesNothing: events published while the sink's process is
// stopped are delivered when it starts again (its durable consumer kept
// them), each once.
func TestSinkDownLosesNothing(t *testing.T) {
	b := startBus(t)
	rec := newReceiver(t, "", nil)
	opts := Options{Sinks: []SinkOptions{{Name: "hook", Kind: KindWebhook, Webhook: WebhookOptions{URL: rec.srv.URL}}}}
	run := func() (stop func()) {
		r, err := New(RunnerOptions{Options: opts, JetStream: b.JetStream(), Prefix: b.Prefix(), Stream: b.StreamName()})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.EnsureConsumers(t.Context()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("runner: %v", err)
			}
		}
	}
	f := testFinding("vm/101", "vm", findings.CategoryPerformance, "high_memory", findings.SeverityWarning)
	stop := run()
	publish(t, b, findingRow(t, "ev-1", "opened", f, time.Now()))
	testkit.EventuallyState(t, 10*time.Second, "first delivery", func() (bool, string) {
		return fmt.Sprint(rec.attempts()) == "map[ev-1:[1:204]]", fmt.Sprint(rec.attempts())
	})
	stop()
	publish(t, b, findingRow(t, "ev-2", "repeated", f, time.Now()))
	publish(t, b, findingRow(t, "ev-3", "resolved", f, time.Now()))
	stop = run()
	defer stop()
	want := "map[ev-1:[1:204] ev-2:[1:204] ev-3:[1:204]]"
	testkit.EventuallyState(t, 10*time.Second, "deliveries after the restart", func() (bool, string) {
		return fmt.Sprint(rec.attempts()) == want, fmt.Sprint(rec.attempts())
	})
}

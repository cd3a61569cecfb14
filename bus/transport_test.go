package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/internal/testkit"
)

type transportFixture struct {
	js  jetstream.JetStream
	tr  *Transport
	reg *prometheus.Registry
}

func newTransportFixture(t *testing.T) *transportFixture {
	t.Helper()
	srv := startServer(t)
	_, js := connect(t, srv.url())
	ensureStream(t, js)
	reg := prometheus.NewRegistry()
	tr, err := NewTransport(TransportOptions{JetStream: js, Prefix: testPrefix, Source: "patrold/test",
		Logger: testLogger(t), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	return &transportFixture{js: js, tr: tr, reg: reg}
}

// run starts a consumer in the background and waits until the durable
// exists (consumers start at new messages). stop cancels and joins it.
func (f *transportFixture) run(t *testing.T, durable string, consume func(ctx context.Context) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- consume(ctx) }()
	testkit.Eventually(t, 5*time.Second, "durable "+durable, func() bool {
		_, err := f.js.Consumer(ctx, contracts.DefaultStreamName, durable)
		return err == nil
	})
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-errc; err != nil {
				t.Errorf("consumer returned %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func (f *transportFixture) publishRaw(t *testing.T, subject string, data []byte) {
	t.Helper()
	if _, err := f.js.Publish(context.Background(), contracts.FullSubject(testPrefix, subject), data); err != nil {
		t.Fatal(err)
	}
}

func TestConsumeOutcomesTerminatesMalformedMessages(t *testing.T) {
	f := newTransportFixture(t)
	var handled []*contracts.RemediationOutcome
	var mu sync.Mutex
	opts := ConsumerOptions{Durable: "outcomes", AckWait: time.Second, MaxDeliver: 3, NakDelay: 50 * time.Millisecond}
	f.run(t, "outcomes", func(ctx context.Context) error {
		return f.tr.ConsumeOutcomes(ctx, opts, func(_ context.Context, o *contracts.RemediationOutcome) error {
			mu.Lock()
			defer mu.Unlock()
			handled = append(handled, o)
			return nil
		})
	})
	noFinding := validOutcome()
	noFinding.FindingID = ""
	unknown := validOutcome()
	unknown.Outcome = "probably_fine"
	for _, raw := range [][]byte{
		[]byte("this is not json"),
		envelopeOf(t, contracts.TypeRemediationRequest, validOutcome()), // wrong type
		envelopeOf(t, contracts.TypeRemediationOutcome, unknown),
		envelopeOf(t, contracts.TypeRemediationOutcome, noFinding),
	} {
		f.publishRaw(t, contracts.SubjectRemediationOutcomes, raw)
	}
	row, err := contracts.OutcomeEvent("outcome-1", validOutcome(), testTime)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.tr.Publish(context.Background(), row); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, "valid outcome handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(handled) == 1
	})
	malformed := f.tr.m.malformed.WithLabelValues(KindRemediationOutcome)
	testkit.Eventually(t, 5*time.Second, "4 malformed counted", func() bool { return testutil.ToFloat64(malformed) == 4 })

	// Terminated means gone: nothing pending, nothing redelivered, even
	// after the ack wait has passed.
	time.Sleep(opts.AckWait + 300*time.Millisecond)
	info, err := f.js.Consumer(context.Background(), contracts.DefaultStreamName, "outcomes")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := info.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ci.NumAckPending != 0 || ci.NumRedelivered != 0 || ci.NumPending != 0 {
		t.Fatalf("consumer ack_pending=%d redelivered=%d pending=%d, want all 0", ci.NumAckPending, ci.NumRedelivered, ci.NumPending)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(handled) != 1 || *handled[0] != *validOutcome() {
		t.Fatalf("handled %v, want exactly the valid outcome", handled)
	}
	if got := testutil.ToFloat64(malformed); got != 4 {
		t.Fatalf("malformed counter %v, want 4 (no retries)", got)
	}
}

// Requests are handled at most MaxInFlight at a time; a handler error or
// panic leads to redelivery after the nak delay, and every request is
// finally handled successfully exactly once.
func TestConsumeRequestsRetriesAndBoundsInFlight(t *testing.T) {
	f := newTransportFixture(t)
	const n, maxInFlight = 12, 3
	var inFlight, peak atomic.Int32
	var mu sync.Mutex
	attempts := map[int]int{}
	succeeded := map[int]int{}
	opts := ConsumerOptions{Durable: "workers", MaxInFlight: maxInFlight, AckWait: 5 * time.Second,
		MaxDeliver: 5, NakDelay: 50 * time.Millisecond}
	f.run(t, "workers", func(ctx context.Context) error {
		return f.tr.Consume(ctx, opts, func(_ context.Context, r *contracts.RemediationRequest) error {
			cur := inFlight.Add(1)
			defer inFlight.Add(-1)
			for p := peak.Load(); cur > p && !peak.CompareAndSwap(p, cur); p = peak.Load() {
			}
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			attempts[r.Attempt]++
			first := attempts[r.Attempt] == 1
			mu.Unlock()
			switch {
			case r.Attempt == 1 && first:
				return errors.New("collector unavailable")
			case r.Attempt == 2 && first:
				panic("worker bug")
			}
			mu.Lock()
			succeeded[r.Attempt]++
			mu.Unlock()
			return nil
		})
	})
	for i := 1; i <= n; i++ {
		r := validRequest()
		r.Attempt = i // distinguishes the requests in this test
		row, err := contracts.RequestEvent(fmt.Sprintf("req-%d", i), r, testTime)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.tr.Publish(context.Background(), row); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 10*time.Second, "all requests handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(succeeded) == n
	})
	time.Sleep(200 * time.Millisecond) // room for any stray redelivery
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i <= n; i++ {
		if succeeded[i] != 1 {
			t.Errorf("request %d succeeded %d times", i, succeeded[i])
		}
	}
	if attempts[1] != 2 || attempts[2] != 2 {
		t.Errorf("failing and panicking requests ran %d and %d times, want 2 each", attempts[1], attempts[2])
	}
	if p := peak.Load(); p > maxInFlight || p < 2 {
		t.Errorf("peak in flight %d, want 2..%d", p, maxInFlight)
	}
	retries := testutil.ToFloat64(f.tr.m.handled.WithLabelValues(KindRemediationRequest, "retry"))
	if retries != 2 {
		t.Errorf("retry counter %v, want 2", retries)
	}
}

// A worker that never answers within AckWait does not keep the request:
// JetStream redelivers it.
func TestConsumeRedeliversAfterAckWait(t *testing.T) {
	f := newTransportFixture(t)
	var deliveries atomic.Int32
	done := make(chan struct{})
	opts := ConsumerOptions{Durable: "slow", MaxInFlight: 1, AckWait: 700 * time.Millisecond, MaxDeliver: 3}
	f.run(t, "slow", func(ctx context.Context) error {
		return f.tr.Consume(ctx, opts, func(hctx context.Context, _ *contracts.RemediationRequest) error {
			if deliveries.Add(1) == 1 {
				<-hctx.Done() // stuck past the ack wait
				return hctx.Err()
			}
			close(done)
			return nil
		})
	})
	row, err := contracts.RequestEvent("req-slow", validRequest(), testTime)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.tr.Publish(context.Background(), row); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("not redelivered; %d deliveries", deliveries.Load())
	}
	if d := deliveries.Load(); d != 2 {
		t.Fatalf("%d deliveries, want 2", d)
	}
}

func TestConsumerOptionsAreValidated(t *testing.T) {
	f := newTransportFixture(t)
	h := func(context.Context, *contracts.RemediationRequest) error { return nil }
	if err := f.tr.Consume(context.Background(), ConsumerOptions{Durable: "a.b"}, h); err == nil || !strings.Contains(err.Error(), "Durable") {
		t.Errorf("bad durable: %v", err)
	}
	if err := f.tr.Consume(context.Background(), ConsumerOptions{Durable: "ok", MaxInFlight: -1}, h); err == nil || !strings.Contains(err.Error(), "MaxInFlight") {
		t.Errorf("negative MaxInFlight: %v", err)
	}
	if err := f.tr.Consume(context.Background(), ConsumerOptions{Durable: "ok"}, nil); err == nil || !strings.Contains(err.Error(), "handler") {
		t.Errorf("nil handler: %v", err)
	}
	if _, err := NewTransport(TransportOptions{Prefix: "patrol"}); err == nil || !strings.Contains(err.Error(), "JetStream") {
		t.Errorf("nil JetStream: %v", err)
	}
}

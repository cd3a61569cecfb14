package assistant

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/bus/embedded/natstest"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/store"
	"github.com/patrold/patrold/store/records"
	"github.com/patrold/patrold/store/storetest"
)

const testPrefix = "patrol"

// startNATS runs a real embedded JetStream server in a temp dir and
// returns a transport over it.
func startNATS(t *testing.T) (jetstream.JetStream, *bus.Transport) {
	t.Helper()
	srv := natstest.Server(t)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateOrUpdateStream(ctx, bus.DefaultOptions().StreamConfig()); err != nil {
		t.Fatal(err)
	}
	tr, err := bus.NewTransport(bus.TransportOptions{JetStream: js, Prefix: testPrefix, Source: "patrold/test"})
	if err != nil {
		t.Fatal(err)
	}
	return js, tr
}

// streamOutcomes returns every outcome message in the stream.
func streamOutcomes(t *testing.T, js jetstream.JetStream) []*contracts.RemediationOutcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, contracts.DefaultStreamName)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{contracts.FullSubject(testPrefix, contracts.SubjectRemediationOutcomes)}})
	if err != nil {
		t.Fatal(err)
	}
	var out []*contracts.RemediationOutcome
	batch, err := cons.Fetch(10, jetstream.FetchMaxWait(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		o, err := contracts.DecodeOutcome(m.Data())
		if err != nil {
			t.Fatalf("outcome on the wire does not decode: %v", err)
		}
		out = append(out, o)
	}
	return out
}

func TestWorkerOverEmbeddedNATS(t *testing.T) {
	fx := newFixture(t)
	js, tr := startNATS(t)
	o := fx.options(findings.AutonomyFull, fx.fixAction("low"))
	o.Publisher, o.Recorder = nil, nil // the worker publishes through the transport
	w, err := NewWorker(WorkerOptions{Options: o, Transport: tr, MaxConcurrent: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker run: %v", err)
		}
	}()

	req := &contracts.RemediationRequest{FindingID: fx.finding.ID, ResourceID: testResource, Category: "capacity", Key: testKey,
		Severity: "critical", Title: "storage almost full", Autonomy: "full", Attempt: 1, RunID: "run1", RequestedAt: t0}
	row, err := contracts.RequestEvent("req-1", req, t0)
	if err != nil {
		t.Fatal(err)
	}
	// The durable consumer delivers new messages only: publish once it exists.
	testkit.Eventually(t, 10*time.Second, "the consumer exists", func() bool {
		_, err := js.Consumer(ctx, contracts.DefaultStreamName, DefaultDurable)
		return err == nil
	})
	if err := tr.Publish(ctx, row); err != nil {
		t.Fatal(err)
	}
	var outs []*contracts.RemediationOutcome
	testkit.Eventually(t, 10*time.Second, "an outcome on the stream", func() bool {
		outs = streamOutcomes(t, js)
		return len(outs) > 0
	})
	if len(outs) != 1 || outs[0].Outcome != contracts.OutcomeFixVerified || outs[0].Attempt != 1 || outs[0].Driver != contracts.DriverPlaybook || outs[0].FindingID != fx.finding.ID {
		t.Fatalf("outcomes %+v", outs)
	}
	// A redelivered request does not act again; it republishes the same
	// outcome, which JetStream drops as a duplicate.
	if err := w.Handle(ctx, req); err != nil {
		t.Fatal(err)
	}
	if again := streamOutcomes(t, js); len(again) != 1 {
		t.Fatalf("after redelivery: %d outcomes", len(again))
	}
	if n := len(splitLines(fx.fixLog())); n != 1 {
		t.Fatalf("action ran %d times", n)
	}
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

func TestWorkerDoesNotRerunAnInterruptedSession(t *testing.T) {
	fx := newFixture(t)
	o := fx.options(findings.AutonomyFull, fx.fixAction("low"))
	w, err := NewWorker(WorkerOptions{Options: o, Transport: noTransport{fx.pub}})
	if err != nil {
		t.Fatal(err)
	}
	// A session for attempt 1 started and never finished (a crash).
	_, err = storetest.RawDB(t, fx.st.Path()).Exec(`INSERT INTO remediation_sessions (id, finding_id, attempt, driver, started_at) VALUES ('s-crashed', ?, 1, 'playbook', ?)`,
		fx.finding.ID, fmtTime(t0))
	if err != nil {
		t.Fatal(err)
	}
	req := &contracts.RemediationRequest{FindingID: fx.finding.ID, Attempt: 1, Autonomy: "full"}
	if err := w.Handle(context.Background(), req); err == nil {
		t.Fatal("a session that may still be running was abandoned")
	}
	fx.clock.advance(DefaultSessionTimeout + time.Minute)
	if err := w.Handle(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	outs := fx.pub.outcomes(t)
	if len(outs) != 1 || outs[0].Outcome != contracts.OutcomeNeedsAttention || outs[0].SessionID != "s-crashed" || fx.fixLog() != "" {
		t.Fatalf("outcomes %+v, action log %q", outs, fx.fixLog())
	}
}

// noTransport publishes to a recorder and never consumes.
type noTransport struct{ *published }

func (noTransport) Consume(ctx context.Context, _ bus.ConsumerOptions, _ func(context.Context, *contracts.RemediationRequest) error) error {
	<-ctx.Done()
	return nil
}

// A request redelivered to a new writer finds the session only as the old
// writer replicated it: finished, outcome and summary columns set, the
// transcript column at its default. The worker republishes that outcome (same session, same
// outcome) and acts no more.
func TestWorkerRepublishesAReplicatedOutcome(t *testing.T) {
	fx := newFixture(t)
	o := fx.options(findings.AutonomyFull, fx.fixAction("low"))
	w, err := NewWorker(WorkerOptions{Options: o, Transport: noTransport{fx.pub}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = storetest.RawDB(t, fx.st.Path()).Exec(`INSERT INTO remediation_sessions (id, finding_id, attempt, driver, started_at, outcome, summary, finished_at)
		VALUES ('s-replicated', ?, 1, 'playbook', ?, 'fix_verified', 'restarted and verified', ?)`,
		fx.finding.ID, fmtTime(t0), fmtTime(t0.Add(time.Minute)))
	if err != nil {
		t.Fatal(err)
	}
	req := &contracts.RemediationRequest{FindingID: fx.finding.ID, Attempt: 1, Autonomy: "full"}
	if err := w.Handle(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	outs := fx.pub.outcomes(t)
	want := &contracts.RemediationOutcome{SessionID: "s-replicated", FindingID: fx.finding.ID, Attempt: 1, Outcome: contracts.OutcomeFixVerified,
		Driver: contracts.DriverPlaybook, Summary: "restarted and verified", StartedAt: t0, FinishedAt: t0.Add(time.Minute)}
	if len(outs) != 1 || !reflect.DeepEqual(outs[0], want) || fx.fixLog() != "" {
		t.Fatalf("outcomes %+v, want %+v; action log %q", outs, want, fx.fixLog())
	}
}

// flakyStore is the store with its writer gone for the first calls of
// FinishSession: they are refused with ErrStoreUnavailable (not taken).
type flakyStore struct {
	*store.Store
	mu      sync.Mutex
	refuse  int
	refused int
}

func (s *flakyStore) FinishSession(ctx context.Context, id string, end records.SessionEnd) error {
	s.mu.Lock()
	if s.refused < s.refuse {
		s.refused++
		s.mu.Unlock()
		return fmt.Errorf("session call finish_session: %w", ErrStoreUnavailable)
	}
	s.mu.Unlock()
	return s.Store.FinishSession(ctx, id, end)
}

// A session that ends while no writer takes its end (a failover under
// way) keeps its result. It stores it once the store answers again,
// within StoreRetry. The action ran once, and the outcome is the real one
// and is published once. Without StoreRetry the end is an error (and the
// request is redelivered).
func TestSessionEndWaitsForTheStore(t *testing.T) {
	fx := newFixture(t)
	flaky := &flakyStore{Store: fx.st, refuse: 3}
	o := fx.options(findings.AutonomyFull, fx.fixAction("low"))
	o.Store, o.StoreRetry = flaky, 10*time.Second
	res, err := fx.assistant(o).Run(context.Background(), Request{FindingID: fx.finding.ID, Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := fx.st.LastSession(context.Background(), fx.finding.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	outs := fx.pub.outcomes(t)
	if res.Transcript.Outcome != contracts.OutcomeFixVerified || stored.Outcome != "fix_verified" || flaky.refused != 3 ||
		len(outs) != 1 || outs[0].Outcome != contracts.OutcomeFixVerified || len(splitLines(fx.fixLog())) != 1 {
		t.Fatalf("outcome %s, stored %+v, refused %d, outcomes %+v, action log %q", res.Transcript.Outcome, stored, flaky.refused, outs, fx.fixLog())
	}

	fx2 := newFixture(t)
	o2 := fx2.options(findings.AutonomyFull, fx2.fixAction("low"))
	o2.Store = &flakyStore{Store: fx2.st, refuse: 1}
	_, err = fx2.assistant(o2).Run(context.Background(), Request{FindingID: fx2.finding.ID, Attempt: 1})
	if !errors.Is(err, ErrStoreUnavailable) || len(fx2.pub.outcomes(t)) != 0 {
		t.Fatalf("without StoreRetry: %v, %d outcomes", err, len(fx2.pub.outcomes(t)))
	}
}

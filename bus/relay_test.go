package bus

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/internal/testkit"
)

func startBus(t *testing.T, reg prometheus.Registerer) *Bus {
	t.Helper()
	b, err := New(Options{
		Source:   "patrold/test",
		Embedded: EmbeddedOptions{Listen: "127.0.0.1:0", StoreDir: t.TempDir()},
	}, nil, reg, WithEmbedded(embedded.Start))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// mixedRows is one of every kind of event the daemon publishes.
func mixedRows(t *testing.T, now time.Time) []contracts.OutboxEvent {
	rows := findingRows(t, "find", 0, 240, now)
	runSubj, runType := contracts.RunSubject()
	rows = append(rows, contracts.OutboxEvent{ID: "run-1", Subject: runSubj, Type: runType, Time: now,
		Data: json.RawMessage(`{"run_id":"01JRUN","status":"healthy","index":240}`)})
	req, err := contracts.RequestEvent("req-1", validRequest(), now)
	if err != nil {
		t.Fatal(err)
	}
	req.Data = json.RawMessage(strings.Replace(string(req.Data), "{", `{"index":241,`, 1))
	appSubj, appType, err := contracts.ApprovalSubject(contracts.ApprovalExpired)
	if err != nil {
		t.Fatal(err)
	}
	rows = append(rows, req, contracts.OutboxEvent{ID: "appr-1", Subject: appSubj, Type: appType,
		ResourceID: "vm/101", Time: now, Data: json.RawMessage(`{"index":242}`)})
	return rows
}

// Every event arrives once, in order, with its envelope; the relay keeps a
// window in flight while the previous one's acks arrive when the outbox
// can read past a seq, and waits for each window otherwise.
func TestRelayDeliversEveryOutboxEventOnceInOrder(t *testing.T) {
	t.Run("pipelined", func(t *testing.T) { testRelayDelivers(t, func(o *sqliteOutbox) Outbox { return o }) })
	t.Run("window by window", func(t *testing.T) { testRelayDelivers(t, func(o *sqliteOutbox) Outbox { return plainOutbox{o} }) })
}

func testRelayDelivers(t *testing.T, outbox func(*sqliteOutbox) Outbox) {
	reg := prometheus.NewRegistry()
	b := startBus(t, reg)
	msgs := make(chan *nats.Msg, 1000)
	sub, err := b.Conn().ChanSubscribe(testPrefix+".>", msgs)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()

	ob := openOutbox(t, filepath.Join(t.TempDir(), "outbox.db"))
	now := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)
	rows := mixedRows(t, now)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Two commits, the second while the relay is already running.
	if err := ob.Insert(ctx, rows[:100]); err != nil {
		t.Fatal(err)
	}
	relay, err := NewRelay(RelayOptions{Outbox: outbox(ob), JetStream: b.JetStream(), Prefix: b.Prefix(), Source: b.Source(),
		Batch: 64, Interval: time.Hour, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx) }()
	if err := ob.Insert(ctx, rows[100:]); err != nil {
		t.Fatal(err)
	}
	relay.Kick() // Interval is an hour: only the kick can publish the second commit

	var got []*nats.Msg
	timeout := time.After(10 * time.Second)
	for len(got) < len(rows) {
		select {
		case m := <-msgs:
			got = append(got, m)
		case <-timeout:
			t.Fatalf("received %d of %d events", len(got), len(rows))
		}
	}
	select { // nothing beyond the outbox
	case m := <-msgs:
		t.Fatalf("unexpected extra message %s %s", m.Subject, m.Header.Get(jetstream.MsgIDHeader))
	case <-time.After(300 * time.Millisecond):
	}

	seen := map[string]int{}
	for i, m := range got {
		row := rows[i]
		ev, err := contracts.DecodeEvent(m.Data)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		seen[ev.ID]++
		if m.Subject != testPrefix+"."+row.Subject {
			t.Errorf("message %d: subject %q, want %q", i, m.Subject, testPrefix+"."+row.Subject)
		}
		if id := m.Header.Get(jetstream.MsgIDHeader); id != row.ID {
			t.Errorf("message %d: Nats-Msg-Id %q, want %q", i, id, row.ID)
		}
		want := contracts.Event{SpecVersion: "1.0", ID: row.ID, Source: "patrold/test", Type: row.Type, Time: row.Time,
			Subject: row.ResourceID, DataContentType: "application/json"}
		gotHead := *ev
		gotHead.Data = nil
		if !gotHead.Time.Equal(want.Time) || gotHead.Time.Location() != time.UTC {
			t.Errorf("message %d: time %v, want %v in UTC", i, gotHead.Time, want.Time)
		}
		gotHead.Time = want.Time
		if !sameHead(gotHead, want) {
			t.Errorf("message %d: envelope\n got %+v\nwant %+v", i, gotHead, want)
		}
		if eventIndex(t, ev) != i {
			t.Errorf("message %d carries index %d: out of order", i, eventIndex(t, ev))
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("event %s delivered %d times", id, n)
		}
	}
	if len(seen) != len(rows) {
		t.Errorf("%d distinct ids, want %d", len(seen), len(rows))
	}
	if got := streamEvents(t, b.JetStream(), testPrefix+".>"); len(got) != len(rows) {
		t.Errorf("stream holds %d events, want %d", len(got), len(rows))
	}
	testkit.Eventually(t, 2*time.Second, "all rows marked sent", func() bool { return ob.count(t, "sent_at IS NULL") == 0 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v", err)
	}
	expected := `
# HELP patrold_outbox_pending Outbox rows not yet acknowledged by JetStream, as of the last relay pass.
# TYPE patrold_outbox_pending gauge
patrold_outbox_pending 0
# HELP patrold_outbox_publish_failures_total Outbox rows whose publish attempt failed and will be retried.
# TYPE patrold_outbox_publish_failures_total counter
patrold_outbox_publish_failures_total 0
# HELP patrold_outbox_published_total Outbox rows published, acknowledged and marked sent.
# TYPE patrold_outbox_published_total counter
patrold_outbox_published_total 243
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(expected),
		"patrold_outbox_pending", "patrold_outbox_published_total", "patrold_outbox_publish_failures_total"); err != nil {
		t.Error(err)
	}
}

func TestRelayPrunesSentRowsPastRetention(t *testing.T) {
	srv := startServer(t)
	_, js := connect(t, srv.url())
	ensureStream(t, js)
	ob := openOutbox(t, filepath.Join(t.TempDir(), "outbox.db"))
	t0 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	ctx := context.Background()
	if err := ob.Insert(ctx, findingRows(t, "old", 0, 10, t0)); err != nil {
		t.Fatal(err)
	}
	clock := t0
	relay, err := NewRelay(RelayOptions{Outbox: ob, JetStream: js, Prefix: testPrefix, Retention: 24 * time.Hour,
		Interval: 10 * time.Millisecond, Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	if err := relay.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	clock = t0.Add(25 * time.Hour) // the first ten are now past retention
	if err := ob.Insert(ctx, findingRows(t, "new", 10, 5, clock)); err != nil {
		t.Fatal(err)
	}
	if err := relay.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := ob.count(t, "1=1"); n != 15 {
		t.Fatalf("before Run: %d rows, want 15 (Flush never prunes)", n)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- relay.Run(runCtx) }()
	testkit.Eventually(t, 3*time.Second, "old rows pruned", func() bool { return ob.count(t, "1=1") == 5 })
	cancel()
	<-done
	if n := ob.count(t, "id LIKE 'new-%' AND sent_at IS NOT NULL"); n != 5 {
		t.Fatalf("%d recent sent rows kept, want 5", n)
	}
}

func TestNewRelayNamesBadOptions(t *testing.T) {
	ob := &sqliteOutbox{}
	js := (jetstream.JetStream)(nil)
	cases := map[string]RelayOptions{
		"Outbox":    {JetStream: jsStub{}, Prefix: "patrol"},
		"JetStream": {Outbox: ob, JetStream: js, Prefix: "patrol"},
		"Prefix":    {Outbox: ob, JetStream: jsStub{}, Prefix: "a.b"},
		"Batch":     {Outbox: ob, JetStream: jsStub{}, Prefix: "patrol", Batch: maxBatch + 1},
	}
	for field, o := range cases {
		if _, err := NewRelay(o); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: error %v does not name the field", field, err)
		}
	}
}

type jsStub struct{}

func (jsStub) PublishMsgAsync(*nats.Msg, ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	return nil, nil
}

func sameHead(a, b contracts.Event) bool {
	return a.SpecVersion == b.SpecVersion && a.ID == b.ID && a.Source == b.Source && a.Type == b.Type &&
		a.Time.Equal(b.Time) && a.Subject == b.Subject && a.DataContentType == b.DataContentType
}

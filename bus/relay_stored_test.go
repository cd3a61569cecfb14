package bus

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/patrold/patrold/contracts"
)

// sameOnStream fails the test unless the stream's events are the
// envelopes of rows, in order, whole.
func sameOnStream(t *testing.T, got []*contracts.Event, rows []contracts.OutboxEvent) {
	t.Helper()
	if len(got) != len(rows) {
		t.Fatalf("stream holds %d events, want %d", len(got), len(rows))
	}
	for i, row := range rows {
		want := contracts.NewEvent(row, "patrold/test")
		if !sameHead(*got[i], want) || string(got[i].Data) != string(want.Data) {
			t.Fatalf("stream event %d = %+v, want %+v", i, *got[i], want)
		}
	}
}

// TestWaitStoredMeansOnTheStream: WaitStored returns only once the
// stream holds the row (read it right after, no wait). With the server
// down it ends with its context, naming the row and how far the stream
// has the outbox; once the server returns the row is published and the
// wait ends.
func TestWaitStoredMeansOnTheStream(t *testing.T) {
	s := startServer(t)
	_, js := connect(t, s.url())
	ensureStream(t, js)
	ob := openOutbox(t, filepath.Join(t.TempDir(), "outbox.db"))
	now := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	rows := findingRows(t, "find", 0, 4, now)
	relay, err := NewRelay(RelayOptions{Outbox: ob, JetStream: js, Prefix: testPrefix, Source: "patrold/test",
		Interval: time.Hour, AckTimeout: 500 * time.Millisecond, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = relay.Run(ctx) }()

	if err := ob.Insert(ctx, rows[:3]); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := relay.WaitStored(wctx, 3); err != nil {
		t.Fatal(err)
	}
	sameOnStream(t, streamEvents(t, js, testPrefix+".>"), rows[:3])

	s.shutdown()
	if err := ob.Insert(ctx, rows[3:]); err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer scancel()
	err = relay.WaitStored(sctx, 4)
	want := fmt.Sprintf("outbox row 4 is not on the stream yet (acknowledged through 3): %v", context.DeadlineExceeded)
	if err == nil || err.Error() != want || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait with the server down: %v, want %q", err, want)
	}

	s.restart()
	rctx, rcancel := context.WithTimeout(ctx, 60*time.Second)
	defer rcancel()
	if err := relay.WaitStored(rctx, 4); err != nil {
		t.Fatal(err)
	}
	sameOnStream(t, streamEvents(t, js, testPrefix+".>"), rows)
}

package bus_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/bus/embedded/natstest"
)

// A process that may not manage the stream (a worker, a notifier) waits
// for serve to create it and never changes it: Start with AttachStream
// returns once the stream exists, whose configuration stays serve's.
func TestAttachStreamWaitsAndChangesNothing(t *testing.T) {
	srv := natstest.Server(t)
	o := bus.DefaultOptions()
	o.URL = srv.ClientURL()
	b, err := bus.New(o, nil, nil, bus.AttachStream())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	started := make(chan error, 1)
	go func() { started <- b.Start(context.Background()) }()
	select {
	case err := <-started:
		t.Fatalf("Start returned before the stream existed: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := o.StreamConfig()
	cfg.MaxMsgs = 5 // serve's, not what this process's options say
	s, err := js.CreateStream(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := s.CachedInfo().Config
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return once the stream existed")
	}
	s, err = js.Stream(context.Background(), cfg.Name)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().Config; !reflect.DeepEqual(got, want) {
		t.Fatalf("the stream after Start:\n%+v\nwant\n%+v", got, want)
	}
}

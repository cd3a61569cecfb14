package bus

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/contracts"
)

const testPrefix = "patrol"

// testServer is a real embedded nats-server with JetStream in a temp dir,
// the same kind the daemon runs. restart keeps the store dir and the port.
type testServer struct {
	tb   testing.TB
	dir  string
	port int
	srv  *server.Server
}

func startServer(tb testing.TB) *testServer {
	tb.Helper()
	s := &testServer{tb: tb, dir: tb.TempDir()}
	s.start("127.0.0.1:0")
	_, portStr, _ := net.SplitHostPort(s.srv.Addr().String())
	s.port, _ = strconv.Atoi(portStr)
	tb.Cleanup(s.shutdown)
	return s
}

func (s *testServer) start(listen string) {
	s.tb.Helper()
	opts, err := embedded.ServerOptions(listen, s.dir)
	if err != nil {
		s.tb.Fatal(err)
	}
	srv, err := embedded.StartServer(opts, nil)
	if err != nil {
		s.tb.Fatal(err)
	}
	s.srv = srv
}

func (s *testServer) shutdown() {
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
		s.srv = nil
	}
}

func (s *testServer) restart() {
	s.tb.Helper()
	s.shutdown()
	s.start(net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)))
}

func (s *testServer) url() string {
	return "nats://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// connect opens a client that reconnects quickly and forever, with a
// JetStream context whose async acks time out like the daemon's.
func connect(tb testing.TB, url string, extra ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	tb.Helper()
	opts := append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond),
		nats.ReconnectJitter(0, 0), nats.Timeout(2 * time.Second)}, extra...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(2*time.Second))
	if err != nil {
		tb.Fatal(err)
	}
	return nc, js
}

func ensureStream(tb testing.TB, js jetstream.JetStream) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := js.CreateOrUpdateStream(ctx, DefaultOptions().StreamConfig()); err != nil {
		tb.Fatal(err)
	}
}

func newTestRelay(tb testing.TB, ob Outbox, js jetstream.JetStream) *Relay {
	tb.Helper()
	r, err := NewRelay(RelayOptions{
		Outbox: ob, JetStream: js, Prefix: testPrefix, Source: "patrold/test",
		Interval: 20 * time.Millisecond, AckTimeout: 2 * time.Second, Logger: testLogger(tb),
	})
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// streamEvents reads every message in the stream from the start (an
// ordered consumer) and decodes the envelopes, in stream order.
func streamEvents(tb testing.TB, js jetstream.JetStream, subject string) []*contracts.Event {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, contracts.DefaultStreamName)
	if err != nil {
		tb.Fatal(err)
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		tb.Fatal(err)
	}
	ci, err := cons.Info(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	want := int(ci.NumPending)
	var out []*contracts.Event
	for len(out) < want {
		batch, err := cons.Fetch(min(500, want-len(out)), jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			tb.Fatal(err)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			ev, err := contracts.DecodeEvent(m.Data())
			if err != nil {
				tb.Fatalf("stream message %s: %v", m.Subject(), err)
			}
			out = append(out, ev)
		}
		if got == 0 {
			break
		}
	}
	return out
}

// eventIndex is the index a findingRows row carries in its data.
func eventIndex(tb testing.TB, ev *contracts.Event) int {
	tb.Helper()
	var d struct {
		Index int `json:"index"`
	}
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		tb.Fatal(err)
	}
	return d.Index
}

// testLogger sends log lines to the test log (shown on failure or -v).
func testLogger(tb testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tbWriter{tb}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

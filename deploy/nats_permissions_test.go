package deploy_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/internal/testkit"
)

// startExample runs a real nats-server loaded from nats-example.conf by
// its own parser, changed only where a test must: loopback and a free
// port, no routes to nats-2/3, no monitoring port, a temporary store,
// and each user's password set to "<user>-pw".
func startExample(t *testing.T) string {
	t.Helper()
	opts, err := server.ProcessConfigFile("nats-example.conf")
	if err != nil {
		t.Fatal(err)
	}
	opts.Host, opts.Port, opts.HTTPHost, opts.HTTPPort = "127.0.0.1", -1, "", 0
	opts.Cluster, opts.Routes, opts.RoutesStr = server.ClusterOpts{}, nil, ""
	opts.StoreDir, opts.JetStreamMaxStore = t.TempDir(), 1<<30
	opts.NoLog, opts.NoSigs = true, true
	for _, u := range opts.Users {
		u.Password = u.Username + "-pw"
	}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server from nats-example.conf not ready")
	}
	t.Cleanup(s.Shutdown)
	return s.ClientURL()
}

// natsUser is one user's connection; every permission violation the
// server reports lands in violations.
type natsUser struct {
	name string
	nc   *nats.Conn
	js   jetstream.JetStream

	mu         sync.Mutex
	violations []string
}

func connectAs(t *testing.T, url, user string) *natsUser {
	t.Helper()
	u := &natsUser{name: user}
	nc, err := nats.Connect(url, nats.UserInfo(user, user+"-pw"), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		u.mu.Lock()
		u.violations = append(u.violations, err.Error())
		u.mu.Unlock()
	}))
	if err != nil {
		t.Fatalf("%s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	u.nc = nc
	if u.js, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	return u
}

// denied runs do and waits for the server's permission violation on
// subject (kind Publish or Subscription): what do returns is not the
// proof (a core publish returns before the server answers).
func (u *natsUser) denied(t *testing.T, what, kind, subject string, do func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = do(ctx)
	want := `permissions violation for ` + strings.ToLower(kind) + ` to "` + strings.ToLower(subject) + `"`
	testkit.EventuallyState(t, 10*time.Second, u.name+" is refused "+what, func() (bool, string) {
		u.mu.Lock()
		defer u.mu.Unlock()
		for _, v := range u.violations {
			if strings.Contains(strings.ToLower(v), want) {
				return true, ""
			}
		}
		return false, strings.Join(u.violations, "; ")
	})
}

func ok(t *testing.T, who, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s cannot %s: %v", who, what, err)
	}
}

// Item 5 of the bus attack, against a real server loaded from
// deploy/nats-example.conf: each user can do what its process needs
// (patrold, the worker and the notifier start on it through bus.Start)
// and nothing the docs forbid: nobody deletes a stream or a consumer,
// the worker publishes outcomes and no other event, the notifier and
// the subscriber publish nothing, and neither can read the remediation
// work queue or patrold's consumers.
func TestNATSExamplePermissions(t *testing.T) {
	url := startExample(t)
	ctx := context.Background()
	start := func(user string) {
		t.Helper()
		o := bus.DefaultOptions()
		o.URL, o.User, o.Password = url, user, user+"-pw"
		b, err := bus.New(o, nil, nil)
		ok(t, user, "configure the bus", err)
		ok(t, user, "start on the bus (stream ensured)", b.Start(ctx))
		t.Cleanup(func() { b.Close() })
	}
	start("patrold")
	p := connectAs(t, url, "patrold")
	for _, c := range []jetstream.ConsumerConfig{
		{Durable: "patrold-assistant", FilterSubject: "patrol.remediation.requests", AckPolicy: jetstream.AckExplicitPolicy},
		{Durable: "patrold-outcomes", FilterSubject: "patrol.remediation.outcomes", AckPolicy: jetstream.AckExplicitPolicy},
	} {
		_, err := p.js.CreateOrUpdateConsumer(ctx, "PATROL", c)
		ok(t, "patrold", "create consumer "+c.Durable, err)
	}
	for _, subj := range []string{"patrol.findings.opened.warning", "patrol.remediation.requests", "patrol.state.changes"} {
		_, err := p.js.Publish(ctx, subj, []byte("{}"))
		ok(t, "patrold", "publish "+subj, err)
	}
	p.denied(t, "delete the stream", "Publish", "$JS.API.STREAM.DELETE.PATROL", func(ctx context.Context) error { return p.js.DeleteStream(ctx, "PATROL") })
	p.denied(t, "delete a consumer", "Publish", "$JS.API.CONSUMER.DELETE.PATROL.patrold-outcomes",
		func(ctx context.Context) error { return p.js.DeleteConsumer(ctx, "PATROL", "patrold-outcomes") })

	start("worker")
	w := connectAs(t, url, "worker")
	queue, err := w.js.Consumer(ctx, "PATROL", "patrold-assistant")
	ok(t, "worker", "open the work queue", err)
	batch, err := queue.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	ok(t, "worker", "pull a request", err)
	n := 0
	for m := range batch.Messages() {
		ok(t, "worker", "ack a request", m.Ack())
		n++
	}
	if n != 1 {
		t.Fatalf("worker pulled %d requests, want 1 (%v)", n, batch.Error())
	}
	_, err = w.js.Publish(ctx, "patrol.remediation.outcomes", []byte("{}"))
	ok(t, "worker", "publish an outcome", err)
	for _, subj := range []string{"patrol.state.changes", "patrol.findings.resolved.warning", "patrol.remediation.requests"} {
		w.denied(t, "publish "+subj, "Publish", subj, func(context.Context) error { return w.nc.Publish(subj, []byte("{}")) })
	}
	w.denied(t, "read patrold's outcome consumer", "Publish", "$JS.API.CONSUMER.INFO.PATROL.patrold-outcomes",
		func(ctx context.Context) error {
			_, err := w.js.Consumer(ctx, "PATROL", "patrold-outcomes")
			return err
		})
	w.denied(t, "delete the work queue", "Publish", "$JS.API.CONSUMER.DELETE.PATROL.patrold-assistant",
		func(ctx context.Context) error { return w.js.DeleteConsumer(ctx, "PATROL", "patrold-assistant") })

	start("notify")
	nf := connectAs(t, url, "notify")
	_, err = nf.js.CreateOrUpdateConsumer(ctx, "PATROL", jetstream.ConsumerConfig{Durable: "patrold-notify-am", FilterSubject: "patrol.findings.>",
		AckPolicy: jetstream.AckExplicitPolicy})
	ok(t, "notify", "create its sink's consumer", err)
	nf.denied(t, "publish an event", "Publish", "patrol.findings.opened.critical",
		func(context.Context) error { return nf.nc.Publish("patrol.findings.opened.critical", []byte("{}")) })
	nf.denied(t, "pull the work queue", "Publish", "$JS.API.CONSUMER.MSG.NEXT.PATROL.patrold-assistant",
		func(context.Context) error {
			return nf.nc.Publish("$JS.API.CONSUMER.MSG.NEXT.PATROL.patrold-assistant", []byte(`{"batch":1}`))
		})
	nf.denied(t, "delete a consumer", "Publish", "$JS.API.CONSUMER.DELETE.PATROL.patrold-notify-am",
		func(ctx context.Context) error { return nf.js.DeleteConsumer(ctx, "PATROL", "patrold-notify-am") })

	s := connectAs(t, url, "subscriber")
	sub, err := s.nc.SubscribeSync("patrol.findings.>")
	ok(t, "subscriber", "subscribe to findings", err)
	defer sub.Unsubscribe()
	own, err := s.js.CreateOrUpdateConsumer(ctx, "PATROL", jetstream.ConsumerConfig{Durable: "subscriber", FilterSubject: "patrol.findings.>",
		DeliverPolicy: jetstream.DeliverAllPolicy, AckPolicy: jetstream.AckExplicitPolicy})
	ok(t, "subscriber", "keep its own consumer", err)
	replay, err := own.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	ok(t, "subscriber", "replay events", err)
	for m := range replay.Messages() {
		ok(t, "subscriber", "ack its own consumer", m.Ack())
	}
	if err := replay.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("subscriber replay: %v", err)
	}
	for _, durable := range []string{"patrold-assistant", "patrold-outcomes"} {
		s.denied(t, "delete "+durable, "Publish", "$JS.API.CONSUMER.DELETE.PATROL."+durable,
			func(ctx context.Context) error { return s.js.DeleteConsumer(ctx, "PATROL", durable) })
	}
	s.denied(t, "pull the work queue", "Publish", "$JS.API.CONSUMER.MSG.NEXT.PATROL.patrold-assistant",
		func(context.Context) error {
			return s.nc.Publish("$JS.API.CONSUMER.MSG.NEXT.PATROL.patrold-assistant", []byte(`{"batch":1}`))
		})
	s.denied(t, "ack the work queue", "Publish", "$JS.ACK.PATROL.patrold-assistant.1.1.1.1.0",
		func(context.Context) error { return s.nc.Publish("$JS.ACK.PATROL.patrold-assistant.1.1.1.1.0", nil) })
	s.denied(t, "publish an event", "Publish", "patrol.findings.resolved.critical",
		func(context.Context) error { return s.nc.Publish("patrol.findings.resolved.critical", []byte("{}")) })
	s.denied(t, "subscribe to remediation requests", "Subscription", "patrol.remediation.requests",
		func(context.Context) error { _, err := s.nc.SubscribeSync("patrol.remediation.requests"); return err })
	s.denied(t, "subscribe to state changes", "Subscription", "patrol.state.changes",
		func(context.Context) error { _, err := s.nc.SubscribeSync("patrol.state.changes"); return err })
	s.denied(t, "delete the stream", "Publish", "$JS.API.STREAM.DELETE.PATROL",
		func(ctx context.Context) error { return s.js.DeleteStream(ctx, "PATROL") })
	if info, err := p.js.Stream(ctx, "PATROL"); err != nil {
		t.Fatalf("the stream is gone: %v", err)
	} else if names := info.ListConsumers(ctx); names.Err() != nil {
		t.Fatal(names.Err())
	}
	for _, durable := range []string{"patrold-assistant", "patrold-outcomes", "patrold-notify-am"} {
		if _, err := p.js.Consumer(ctx, "PATROL", durable); err != nil {
			t.Fatalf("consumer %s is gone: %v", durable, err)
		}
	}
}

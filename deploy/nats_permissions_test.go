package deploy_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/bus/embedded/natstest"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/notify"
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

func connectAs(t *testing.T, url, user string) *natstest.User {
	t.Helper()
	return natstest.ConnectAs(t, url, user, nats.UserInfo(user, user+"-pw"))
}

func ok(t *testing.T, who, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s cannot %s: %v", who, what, err)
	}
}

// Item 5 of the bus attack, against a real server loaded from
// deploy/nats-example.conf. Each user can do what its process needs:
// patrold, the worker and the notifier start on it through bus.Start.
// No user can do what the docs forbid:
//   - nobody deletes the stream or one of patrold's consumers;
//   - only patrold manages the stream: the worker and the notifier find it;
//   - the worker publishes outcomes and no other event;
//   - the notifier and the subscriber publish nothing, and neither can
//     read the remediation work queue or patrold's consumers;
//   - nobody but patrold creates a consumer on a subject of its choosing.
func TestNATSExamplePermissions(t *testing.T) {
	url := startExample(t)
	ctx := context.Background()
	start := func(user string, with ...bus.Option) {
		t.Helper()
		o := bus.DefaultOptions()
		o.URL, o.User, o.Password = url, user, user+"-pw"
		b, err := bus.New(o, nil, nil, with...)
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
		_, err := p.JS.CreateOrUpdateConsumer(ctx, "PATROL", c)
		ok(t, "patrold", "create consumer "+c.Durable, err)
	}
	for _, subj := range []string{"patrol.findings.opened.warning", "patrol.remediation.requests", "patrol.state.changes"} {
		_, err := p.JS.Publish(ctx, subj, []byte("{}"))
		ok(t, "patrold", "publish "+subj, err)
	}
	p.Denied(t, "delete the stream", "Publish", "$JS.API.STREAM.DELETE.PATROL", func(ctx context.Context) error { return p.JS.DeleteStream(ctx, "PATROL") })
	p.Denied(t, "delete a consumer", "Publish", "$JS.API.CONSUMER.DELETE.PATROL.patrold-outcomes",
		func(ctx context.Context) error { return p.JS.DeleteConsumer(ctx, "PATROL", "patrold-outcomes") })

	start("worker", bus.AttachStream())
	w := connectAs(t, url, "worker")
	queue, err := w.JS.Consumer(ctx, "PATROL", "patrold-assistant")
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
	_, err = w.JS.Publish(ctx, "patrol.remediation.outcomes", []byte("{}"))
	ok(t, "worker", "publish an outcome", err)
	for _, subj := range []string{"patrol.state.changes", "patrol.findings.resolved.warning", "patrol.remediation.requests"} {
		w.Denied(t, "publish "+subj, "Publish", subj, func(context.Context) error { return w.NC.Publish(subj, []byte("{}")) })
	}
	w.Denied(t, "read patrold's outcome consumer", "Publish", "$JS.API.CONSUMER.INFO.PATROL.patrold-outcomes",
		func(ctx context.Context) error {
			_, err := w.JS.Consumer(ctx, "PATROL", "patrold-outcomes")
			return err
		})
	w.Denied(t, "delete the work queue", "Publish", "$JS.API.CONSUMER.DELETE.PATROL.patrold-assistant",
		func(ctx context.Context) error { return w.JS.DeleteConsumer(ctx, "PATROL", "patrold-assistant") })
	cut := bus.DefaultOptions().StreamConfig()
	cut.MaxMsgs = 2
	w.Denied(t, "cut the stream", "Publish", "$JS.API.STREAM.UPDATE.PATROL",
		func(ctx context.Context) error { _, err := w.JS.UpdateStream(ctx, cut); return err })
	w.Denied(t, "point the work queue at every event", "Publish", "$JS.API.CONSUMER.CREATE.PATROL.patrold-assistant.patrol.>",
		func(ctx context.Context) error {
			_, err := w.JS.CreateOrUpdateConsumer(ctx, "PATROL", jetstream.ConsumerConfig{Durable: "patrold-assistant",
				FilterSubject: "patrol.>", AckPolicy: jetstream.AckExplicitPolicy})
			return err
		})

	start("notify", bus.AttachStream())
	nf := connectAs(t, url, "notify")
	_, err = nf.JS.CreateOrUpdateConsumer(ctx, "PATROL", jetstream.ConsumerConfig{Durable: "patrold-notify-am", FilterSubject: "patrol.findings.>",
		AckPolicy: jetstream.AckExplicitPolicy})
	ok(t, "notify", "create its sink's consumer", err)
	replayer, err := nf.JS.CreateConsumer(ctx, "PATROL", jetstream.ConsumerConfig{Name: notify.ReplayConsumer("am"),
		FilterSubject: "patrol.findings.>", DeliverPolicy: jetstream.DeliverAllPolicy, AckPolicy: jetstream.AckNonePolicy})
	ok(t, "notify", "create an alertmanager sink's replay consumer", err)
	first, err := replayer.Next(jetstream.FetchMaxWait(5 * time.Second))
	ok(t, "notify", "replay a finding event", err)
	if first.Subject() != "patrol.findings.opened.warning" {
		t.Fatalf("notify replayed %s, want patrol.findings.opened.warning", first.Subject())
	}
	nf.Denied(t, "delete its replay consumer", "Publish", "$JS.API.CONSUMER.DELETE.PATROL."+notify.ReplayConsumer("am"),
		func(ctx context.Context) error {
			return nf.JS.DeleteConsumer(ctx, "PATROL", notify.ReplayConsumer("am"))
		})
	nf.Denied(t, "read remediation requests through its own consumer", "Publish",
		"$JS.API.CONSUMER.CREATE.PATROL.patrold-notify-am.patrol.remediation.>", func(ctx context.Context) error {
			_, err := nf.JS.CreateOrUpdateConsumer(ctx, "PATROL", jetstream.ConsumerConfig{Durable: "patrold-notify-am",
				FilterSubject: "patrol.remediation.>", AckPolicy: jetstream.AckExplicitPolicy})
			return err
		})
	nf.Denied(t, "cut the stream", "Publish", "$JS.API.STREAM.UPDATE.PATROL",
		func(ctx context.Context) error { _, err := nf.JS.UpdateStream(ctx, cut); return err })
	nf.Denied(t, "open a consumer of its own naming", "Publish", "$JS.API.CONSUMER.CREATE.PATROL.intruder.patrol.remediation.>",
		func(ctx context.Context) error {
			_, err := nf.JS.CreateConsumer(ctx, "PATROL", jetstream.ConsumerConfig{Name: "intruder", FilterSubject: "patrol.remediation.>"})
			return err
		})
	nf.Denied(t, "take over the work queue", "Publish", "$JS.API.CONSUMER.CREATE.PATROL.patrold-assistant.patrol.remediation.requests",
		func(ctx context.Context) error {
			_, err := nf.JS.CreateOrUpdateConsumer(ctx, "PATROL", jetstream.ConsumerConfig{Durable: "patrold-assistant",
				FilterSubject: "patrol.remediation.requests", AckPolicy: jetstream.AckExplicitPolicy})
			return err
		})
	nf.Denied(t, "publish an event", "Publish", "patrol.findings.opened.critical",
		func(context.Context) error { return nf.NC.Publish("patrol.findings.opened.critical", []byte("{}")) })
	nf.Denied(t, "pull the work queue", "Publish", "$JS.API.CONSUMER.MSG.NEXT.PATROL.patrold-assistant",
		func(context.Context) error {
			return nf.NC.Publish("$JS.API.CONSUMER.MSG.NEXT.PATROL.patrold-assistant", []byte(`{"batch":1}`))
		})
	nf.Denied(t, "delete a consumer", "Publish", "$JS.API.CONSUMER.DELETE.PATROL.patrold-notify-am",
		func(ctx context.Context) error { return nf.JS.DeleteConsumer(ctx, "PATROL", "patrold-notify-am") })

	s := connectAs(t, url, "subscriber")
	sub, err := s.NC.SubscribeSync("patrol.findings.>")
	ok(t, "subscriber", "subscribe to findings", err)
	defer sub.Unsubscribe()
	own, err := s.JS.CreateOrUpdateConsumer(ctx, "PATROL", jetstream.ConsumerConfig{Durable: "subscriber", FilterSubject: "patrol.findings.>",
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
	s.Denied(t, "keep its consumer on every event", "Publish", "$JS.API.CONSUMER.CREATE.PATROL.subscriber.patrol.>",
		func(ctx context.Context) error {
			_, err := s.JS.CreateOrUpdateConsumer(ctx, "PATROL", jetstream.ConsumerConfig{Durable: "subscriber", FilterSubject: "patrol.>"})
			return err
		})
	for _, durable := range []string{"patrold-assistant", "patrold-outcomes"} {
		s.Denied(t, "delete "+durable, "Publish", "$JS.API.CONSUMER.DELETE.PATROL."+durable,
			func(ctx context.Context) error { return s.JS.DeleteConsumer(ctx, "PATROL", durable) })
	}
	s.Denied(t, "pull the work queue", "Publish", "$JS.API.CONSUMER.MSG.NEXT.PATROL.patrold-assistant",
		func(context.Context) error {
			return s.NC.Publish("$JS.API.CONSUMER.MSG.NEXT.PATROL.patrold-assistant", []byte(`{"batch":1}`))
		})
	s.Denied(t, "ack the work queue", "Publish", "$JS.ACK.PATROL.patrold-assistant.1.1.1.1.0",
		func(context.Context) error { return s.NC.Publish("$JS.ACK.PATROL.patrold-assistant.1.1.1.1.0", nil) })
	s.Denied(t, "publish an event", "Publish", "patrol.findings.resolved.critical",
		func(context.Context) error { return s.NC.Publish("patrol.findings.resolved.critical", []byte("{}")) })
	s.Denied(t, "subscribe to remediation requests", "Subscription", "patrol.remediation.requests",
		func(context.Context) error { _, err := s.NC.SubscribeSync("patrol.remediation.requests"); return err })
	s.Denied(t, "subscribe to state changes", "Subscription", "patrol.state.changes",
		func(context.Context) error { _, err := s.NC.SubscribeSync("patrol.state.changes"); return err })
	s.Denied(t, "delete the stream", "Publish", "$JS.API.STREAM.DELETE.PATROL",
		func(ctx context.Context) error { return s.JS.DeleteStream(ctx, "PATROL") })
	if info, err := p.JS.Stream(ctx, "PATROL"); err != nil {
		t.Fatalf("the stream is gone: %v", err)
	} else if names := info.ListConsumers(ctx); names.Err() != nil {
		t.Fatal(names.Err())
	}
	for _, durable := range []string{"patrold-assistant", "patrold-outcomes", "patrold-notify-am"} {
		if _, err := p.JS.Consumer(ctx, "PATROL", durable); err != nil {
			t.Fatalf("consumer %s is gone: %v", durable, err)
		}
	}
}

// The embedded server's users have the permissions nats-example.conf
// gives the same users, subject for subject: the example's proof above
// holds for the embedded server of serve with notify.example.yaml (whose
// sinks are the example's am, chat and audit).
func TestEmbeddedRolesAreTheExamplesUsers(t *testing.T) {
	opts, err := server.ProcessConfigFile("nats-example.conf")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load([]byte(read(t, "notify.example.yaml")), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := daemon.EmbeddedNames(cfg)
	if want := (embedded.Names{Prefix: contracts.DefaultSubjectPrefix, Stream: contracts.DefaultStreamName, LeaseBucket: contracts.DefaultLeaseBucket,
		WorkQueue: assistant.DefaultDurable, Outcomes: daemon.OutcomesDurable, Notify: []embedded.Sink{
			{Durable: notify.Durable("am"), Filters: []string{"patrol.findings.>"}, Replay: notify.ReplayConsumer("am")},
			{Durable: notify.Durable("chat"), Filters: []string{"patrol.findings.*.critical"}},
			{Durable: notify.Durable("audit"), Filters: []string{"patrol.runs.completed", "patrol.findings.resolved.*"}},
		}}); !reflect.DeepEqual(names, want) {
		t.Fatalf("names of notify.example.yaml: %+v, want %+v", names, want)
	}
	user := map[embedded.Role]string{embedded.RoleDaemon: "patrold", embedded.RoleWorker: "worker", embedded.RoleNotify: "notify",
		embedded.RoleSubscriber: "subscriber"}
	for _, r := range embedded.Roles {
		i := slices.IndexFunc(opts.Users, func(u *server.User) bool { return u.Username == user[r] })
		if i < 0 {
			t.Fatalf("nats-example.conf has no user %q for the role %s", user[r], r)
		}
		got, want := r.Permissions(names), opts.Users[i].Permissions
		if !reflect.DeepEqual(got, want) {
			g, _ := json.MarshalIndent(got, "", " ")
			w, _ := json.MarshalIndent(want, "", " ")
			t.Errorf("role %s:\n%s\nnats-example.conf user %s:\n%s", r, g, user[r], w)
		}
	}
}

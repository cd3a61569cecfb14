package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/bus/embedded/natstest"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/patrol"
)

// replayCommands are the commands docs/NATS.md gives for replaying events
// with the subscriber's seed (its "replay" block, comments left out).
var replayCommands = []string{
	`nats --nkey var/nats-subscriber.nk consumer add PATROL subscriber --filter 'patrol.findings.>' --pull --deliver all --ack none --replay instant --defaults`,
	`nats --nkey var/nats-subscriber.nk sub --stream PATROL --durable subscriber`,
	`nats --nkey var/nats-subscriber.nk consumer rm PATROL subscriber --force`,
}

// documentedReplay reads the commands of NATS.md's replay block.
func documentedReplay(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("../docs/NATS.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i := strings.Index(doc, "<!-- replay -->\n```sh\n")
	if i < 0 {
		t.Fatal("NATS.md has no replay block")
	}
	block := doc[i+len("<!-- replay -->\n```sh\n"):]
	block = block[:strings.Index(block, "```")]
	var cmds []string
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		if !strings.HasPrefix(line, "#") {
			cmds = append(cmds, line)
		}
	}
	return cmds
}

// eventIDs lists "subject id" of each message, in order.
func eventIDs(t *testing.T, msgs []jetstream.Msg) []string {
	t.Helper()
	var out []string
	for _, m := range msgs {
		var ev struct{ ID string }
		if err := json.Unmarshal(m.Data(), &ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, m.Subject()+" "+ev.ID)
	}
	return out
}

// subscriberReplay does what the documented commands make the nats CLI
// (v0.5, the same nats.go) send, with the subscriber's seed: `consumer
// add` looks up the stream and the consumer, then creates it; `sub
// --stream --durable` looks both up, reads the consumer's info and pulls
// until n events came. It returns "subject id" of each.
func subscriberReplay(t *testing.T, js jetstream.JetStream, n int) []string {
	t.Helper()
	ctx := context.Background()
	s, err := js.Stream(ctx, "PATROL")
	if err != nil {
		t.Fatalf("consumer add: stream: %v", err)
	}
	if _, err := s.Consumer(ctx, embedded.SubscriberConsumer); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("consumer add: lookup: %v, want not found", err)
	}
	if _, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Name: embedded.SubscriberConsumer, FilterSubject: "patrol.findings.>",
		DeliverPolicy: jetstream.DeliverAllPolicy, AckPolicy: jetstream.AckNonePolicy, ReplayPolicy: jetstream.ReplayInstantPolicy}); err != nil {
		t.Fatalf("consumer add: %v", err)
	}
	if s, err = js.Stream(ctx, "PATROL"); err != nil {
		t.Fatalf("sub: stream: %v", err)
	}
	cons, err := s.Consumer(ctx, embedded.SubscriberConsumer)
	if err != nil {
		t.Fatalf("sub: consumer: %v", err)
	}
	if _, err := cons.Info(ctx); err != nil {
		t.Fatalf("sub: consumer info: %v", err)
	}
	got := make(chan jetstream.Msg, n+10)
	cc, err := cons.Consume(func(m jetstream.Msg) { got <- m })
	if err != nil {
		t.Fatalf("sub: %v", err)
	}
	defer cc.Stop()
	var msgs []jetstream.Msg
	for len(msgs) < n {
		select {
		case m := <-got:
			msgs = append(msgs, m)
		case <-time.After(10 * time.Second):
			t.Fatalf("sub: %d of %d events", len(msgs), n)
		}
	}
	return eventIDs(t, msgs)
}

// Item 6 of the replay issue, through serve's embedded server: the
// replay docs/NATS.md documents works with the subscriber's generated
// seed, twice from the first event; `nats sub --all` on a subject is
// refused, and the daemon logs that refusal once at WARN, counts it and
// logs no ERROR.
func TestDocumentedReplayWorks(t *testing.T) {
	if got := documentedReplay(t); !reflect.DeepEqual(got, replayCommands) {
		t.Fatalf("NATS.md's replay commands\n%q\nthis test runs\n%q", got, replayCommands)
	}
	dir := t.TempDir()
	useSnapshot(t, dir, "faults.json")
	logs := &testkit.LogBuffer{}
	reg := prometheus.NewRegistry()
	d, err := daemon.New(daemon.Options{Config: testConfig(t, dir, "", ""), Registerer: reg, Gatherer: reg, Stderr: logs})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(context.Background()) })
	ctx := context.Background()
	rep, err := d.RunNow(ctx, patrol.TriggerManual)
	if err != nil {
		t.Fatal(err)
	}
	// What the stream holds, read by the daemon.
	djs, err := jetstream.New(natsAs(t, d, embedded.RoleDaemon))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	testkit.Eventually(t, 10*time.Second, "every opened finding is on the stream", func() bool {
		st, err := djs.Stream(ctx, "PATROL")
		if err != nil {
			return false
		}
		want = nil
		for seq := st.CachedInfo().State.FirstSeq; seq <= st.CachedInfo().State.LastSeq && seq > 0; seq++ {
			m, err := st.GetMsg(ctx, seq)
			if err != nil {
				return false
			}
			if strings.HasPrefix(m.Subject, "patrol.findings.") {
				var ev struct{ ID string }
				if err := json.Unmarshal(m.Data, &ev); err != nil {
					t.Fatal(err)
				}
				want = append(want, m.Subject+" "+ev.ID)
			}
		}
		return len(want) == len(rep.Findings) && len(want) > 0
	})

	sub, err := nats.NkeyOptionFromSeed(daemon.NATSSeedFile(dir, embedded.RoleSubscriber))
	if err != nil {
		t.Fatal(err)
	}
	u := natstest.ConnectAs(t, d.NATSURL(), "subscriber", sub)
	for round := range 2 {
		if got := subscriberReplay(t, u.JS, len(want)); !reflect.DeepEqual(got, want) {
			t.Fatalf("replay %d:\n%q\nwant\n%q", round+1, got, want)
		}
		// consumer rm, to start over
		if err := u.JS.DeleteConsumer(ctx, "PATROL", embedded.SubscriberConsumer); err != nil {
			t.Fatalf("consumer rm: %v", err)
		}
	}
	// `nats sub 'patrol.findings.>' --all` first looks the stream up by
	// subject, then would create a consumer of a random name.
	u.Denied(t, "look a stream up by subject", "Publish", "$JS.API.STREAM.NAMES", func(ctx context.Context) error {
		_, err := u.JS.StreamNameBySubject(ctx, "patrol.findings.>")
		return err
	})
	u.Denied(t, "keep a consumer of a random name", "Publish", "$JS.API.CONSUMER.CREATE.PATROL.random.patrol.findings.>",
		func(ctx context.Context) error {
			_, err := u.JS.CreateConsumer(ctx, "PATROL", jetstream.ConsumerConfig{Name: "random", FilterSubject: "patrol.findings.>",
				AckPolicy: jetstream.AckNonePolicy})
			return err
		})
	testkit.Eventually(t, 10*time.Second, "both refusals are counted", func() bool {
		return strings.Contains(scrapeRegistry(t, reg), `patrold_nats_refused_total{kind="publish"} 2`)
	})
	var warned []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=ERROR") {
			t.Errorf("the daemon logged an error: %s", line)
		}
		if strings.Contains(line, "nats client refused") {
			warned = append(warned, line[strings.Index(line, "level="):strings.Index(line, " msg=")]+" "+
				line[strings.Index(line, "Subject "):])
		}
	}
	if want := []string{`level=WARN Subject \"$JS.API.STREAM.NAMES\""`,
		`level=WARN Subject \"$JS.API.CONSUMER.CREATE.PATROL.random.patrol.findings.>\""`}; !reflect.DeepEqual(warned, want) {
		t.Fatalf("logged\n%q\nwant\n%q", warned, want)
	}
}

// scrapeRegistry is reg in the text exposition format.
func scrapeRegistry(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

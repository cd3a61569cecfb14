package embedded_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/bus/embedded/natstest"
)

// testNames are the names of the default configuration with two notify
// sinks: an alertmanager (one filter, a replay) and a webhook of two
// subjects. deploy/ ties the names to the code's constants.
var testNames = embedded.Names{Prefix: "patrol", Stream: "PATROL", LeaseBucket: "patrold_leader", WorkQueue: "patrold-assistant",
	Outcomes: "patrold-outcomes", Notify: []embedded.Sink{
		{Durable: "patrold-notify-am", Filters: []string{"patrol.findings.>"}, Replay: "patrold-replay-am"},
		{Durable: "patrold-notify-audit", Filters: []string{"patrol.runs.completed", "patrol.findings.resolved.*"}},
	}}

// rolesServer starts the embedded server with its users, as serve does,
// and lets the daemon make the stream, patrold's consumers and the lease
// bucket, and publish events; it returns the URL and the seeds' dir.
func rolesServer(t *testing.T) (string, string, jetstream.JetStream) {
	t.Helper()
	dir := t.TempDir()
	srv, err := embedded.Auth{Dir: dir, Names: testNames}.Starter()("127.0.0.1:0", t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	url := srv.ClientURL()
	js, err := jetstream.New(natstest.ConnectRole(t, url, dir, embedded.RoleDaemon))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, bus.DefaultOptions().StreamConfig()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []jetstream.ConsumerConfig{
		{Durable: "patrold-assistant", FilterSubject: "patrol.remediation.requests"},
		{Durable: "patrold-outcomes", FilterSubject: "patrol.remediation.outcomes"},
		{Durable: "patrold-notify-am", FilterSubject: "patrol.findings.>"},
		{Durable: "patrold-notify-audit", FilterSubjects: []string{"patrol.runs.completed", "patrol.findings.resolved.*"}},
	} {
		c.AckPolicy = jetstream.AckExplicitPolicy
		if _, err := js.CreateOrUpdateConsumer(ctx, "PATROL", c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "patrold_leader"}); err != nil {
		t.Fatal(err)
	}
	for _, subj := range []string{"patrol.findings.opened.warning", "patrol.findings.resolved.warning", "patrol.remediation.requests",
		"patrol.remediation.outcomes", "patrol.state.changes", "patrol.runs.completed"} {
		if _, err := js.Publish(ctx, subj, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	return url, dir, js
}

func connectRole(t *testing.T, url, dir string, r embedded.Role) *natstest.User {
	t.Helper()
	nk, err := nats.NkeyOptionFromSeed(filepath.Join(dir, embedded.SeedFile(r)))
	if err != nil {
		t.Fatal(err)
	}
	return natstest.ConnectAs(t, url, string(r), nk)
}

type verb struct {
	subject string
	body    []byte
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// apiVerbs is every verb of the JetStream API (nats-server's
// jetstream_api.go), aimed at the events stream, the lease bucket's
// stream, every consumer patrold and its roles name and one of an
// intruder's naming, with a hostile body: a stream cut to 2 messages, a
// consumer reading everything.
func apiVerbs() []verb {
	hostile := bus.DefaultOptions().StreamConfig()
	hostile.MaxMsgs = 2
	var vs []verb
	add := func(subject string, body any) {
		b, ok := body.([]byte)
		if !ok {
			b = mustJSON(body)
		}
		vs = append(vs, verb{subject, b})
	}
	empty := []byte(nil)
	add("$JS.API.INFO", empty)
	add("$JS.API.STREAM.NAMES", map[string]string{"subject": "patrol.>"})
	add("$JS.API.STREAM.LIST", empty)
	add("$JS.API.META.LEADER.STEPDOWN", empty)
	add("$JS.API.META.RESCUE", empty)
	add("$JS.API.SERVER.REMOVE", map[string]string{"peer": "x"})
	add("$JS.API.SERVER.EVACUATE", map[string]string{"peer": "x"})
	add("$JS.API.ACCOUNT.PURGE.$G", empty)
	add("$JS.API.ACCOUNT.STREAM.MOVE.$G.PATROL", empty)
	add("$JS.API.ACCOUNT.STREAM.CANCEL_MOVE.$G.PATROL", empty)
	for _, s := range []string{"PATROL", "KV_patrold_leader"} {
		cfg := hostile
		cfg.Name = s
		add("$JS.API.STREAM.CREATE."+s, cfg)
		add("$JS.API.STREAM.UPDATE."+s, cfg)
		add("$JS.API.STREAM.INFO."+s, empty)
		add("$JS.API.STREAM.DELETE."+s, empty)
		add("$JS.API.STREAM.PURGE."+s, map[string]any{})
		add("$JS.API.STREAM.MSG.DELETE."+s, map[string]any{"seq": 1})
		add("$JS.API.STREAM.MSG.GET."+s, map[string]any{"seq": 1})
		add("$JS.API.DIRECT.GET."+s, map[string]any{"seq": 1})
		add("$JS.API.DIRECT.GET."+s+".patrol.remediation.requests", empty)
		add("$JS.API.STREAM.SNAPSHOT."+s, map[string]any{"deliver_subject": "_INBOX.snapshot", "chunk_size": 1024})
		add("$JS.API.STREAM.RESTORE."+s, map[string]any{"config": cfg})
		add("$JS.API.STREAM.LEADER.STEPDOWN."+s, empty)
		add("$JS.API.STREAM.PEER.REMOVE."+s, map[string]string{"peer": "x"})
		add("$JS.API.STREAM.PEER.EVACUATE."+s, map[string]string{"peer": "x"})
		add("$JS.API.STREAM.CANCEL_MOVE."+s, empty)
	}
	add("$JS.API.CONSUMER.NAMES.PATROL", empty)
	add("$JS.API.CONSUMER.LIST.PATROL", empty)
	everything := map[string]any{"stream_name": "PATROL", "config": map[string]any{"filter_subject": "patrol.>", "ack_policy": "none",
		"deliver_policy": "all"}}
	add("$JS.API.CONSUMER.CREATE.PATROL", everything)
	for _, c := range []string{"patrold-assistant", "patrold-outcomes", "patrold-notify-am", "patrold-replay-am", "patrold-notify-audit",
		"subscriber", "intruder"} {
		named := func(filter string) map[string]any {
			return map[string]any{"stream_name": "PATROL", "config": map[string]any{"name": c, "filter_subject": filter, "ack_policy": "none",
				"deliver_policy": "all"}}
		}
		add("$JS.API.CONSUMER.CREATE.PATROL."+c, named("patrol.>"))
		for _, f := range []string{"patrol.findings.>", "patrol.remediation.requests", "patrol.state.changes", "patrol.>"} {
			add("$JS.API.CONSUMER.CREATE.PATROL."+c+"."+f, named(f))
		}
		durable := named("patrol.>")
		durable["config"].(map[string]any)["durable_name"] = c
		add("$JS.API.CONSUMER.DURABLE.CREATE.PATROL."+c, durable)
		add("$JS.API.CONSUMER.INFO.PATROL."+c, empty)
		add("$JS.API.CONSUMER.MSG.NEXT.PATROL."+c, map[string]any{"batch": 1, "no_wait": true})
		add("$JS.API.CONSUMER.PAUSE.PATROL."+c, map[string]any{"pause_until": "2999-01-01T00:00:00Z"})
		add("$JS.API.CONSUMER.UNPIN.PATROL."+c, map[string]string{"group": "g"})
		add("$JS.API.CONSUMER.LEADER.STEPDOWN.PATROL."+c, empty)
		add("$JS.API.CONSUMER.PEER.REMOVE.PATROL."+c, map[string]string{"peer": "x"})
		add("$JS.API.CONSUMER.PEER.EVACUATE.PATROL."+c, map[string]string{"peer": "x"})
		add("$JS.API.CONSUMER.DELETE.PATROL."+c, empty)
	}
	// Not the API, but the same harm: taking the leader lease.
	add("$KV.patrold_leader.patrol", []byte("intruder"))
	return vs
}

// state is what no role but the daemon may change: the stream's
// configuration and message count, and the filters of patrold's
// consumers and of the sinks' single-filter durable.
type state struct {
	Config   jetstream.StreamConfig
	Messages uint64
	Filters  map[string][]string
	Lease    jetstream.StreamConfig
}

func readState(t *testing.T, js jetstream.JetStream) state {
	t.Helper()
	ctx := context.Background()
	s, err := js.Stream(ctx, "PATROL")
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.Stream(ctx, "KV_patrold_leader")
	if err != nil {
		t.Fatal(err)
	}
	st := state{Config: s.CachedInfo().Config, Messages: s.CachedInfo().State.Msgs, Filters: map[string][]string{},
		Lease: kv.CachedInfo().Config}
	for _, c := range []string{"patrold-assistant", "patrold-outcomes", "patrold-notify-am"} {
		ci, err := js.Consumer(ctx, "PATROL", c)
		if err != nil {
			t.Fatalf("consumer %s: %v", c, err)
		}
		st.Filters[c] = append([]string{ci.CachedInfo().Config.FilterSubject}, ci.CachedInfo().Config.FilterSubjects...)
	}
	return st
}

// Item 7 of the attack: every verb of the JetStream API with every
// non-daemon seed against the embedded server with its credentials.
// Each role reaches exactly the subjects it needs (docs/NATS.md, role
// permissions); afterwards the stream holds the same configuration and
// messages, and patrold's consumers read what they read.
func TestRolesOnTheJetStreamAPI(t *testing.T) {
	url, dir, js := rolesServer(t)
	before := readState(t, js)
	if before.Messages != 6 {
		t.Fatalf("the stream holds %d messages, want 6", before.Messages)
	}
	want := map[embedded.Role][]string{
		embedded.RoleWorker: {
			"$JS.API.CONSUMER.CREATE.PATROL.patrold-assistant.patrol.remediation.requests",
			"$JS.API.CONSUMER.INFO.PATROL.patrold-assistant",
			"$JS.API.CONSUMER.MSG.NEXT.PATROL.patrold-assistant",
			"$JS.API.STREAM.INFO.PATROL",
		},
		// A sink of several subjects needs the create subject without a
		// filter: the server cannot pin a list (docs/NATS.md).
		embedded.RoleNotify: {
			"$JS.API.CONSUMER.CREATE.PATROL.patrold-notify-am.patrol.findings.>",
			"$JS.API.CONSUMER.CREATE.PATROL.patrold-notify-audit",
			"$JS.API.CONSUMER.CREATE.PATROL.patrold-replay-am.patrol.findings.>",
			"$JS.API.CONSUMER.INFO.PATROL.patrold-notify-am",
			"$JS.API.CONSUMER.INFO.PATROL.patrold-notify-audit",
			"$JS.API.CONSUMER.MSG.NEXT.PATROL.patrold-notify-am",
			"$JS.API.CONSUMER.MSG.NEXT.PATROL.patrold-notify-audit",
			"$JS.API.CONSUMER.MSG.NEXT.PATROL.patrold-replay-am",
			"$JS.API.STREAM.INFO.PATROL",
		},
		embedded.RoleSubscriber: {
			"$JS.API.CONSUMER.CREATE.PATROL.subscriber.patrol.findings.>",
			"$JS.API.CONSUMER.DELETE.PATROL.subscriber",
			"$JS.API.CONSUMER.INFO.PATROL.subscriber",
			"$JS.API.CONSUMER.MSG.NEXT.PATROL.subscriber",
			"$JS.API.STREAM.INFO.PATROL",
		},
	}
	verbs := apiVerbs()
	for _, r := range []embedded.Role{embedded.RoleWorker, embedded.RoleNotify, embedded.RoleSubscriber} {
		u := connectRole(t, url, dir, r)
		var got []string
		for _, v := range verbs {
			if u.Try(t, v.subject, v.body) {
				got = append(got, v.subject)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want[r]) {
			t.Errorf("%s reaches\n%q\nwant\n%q", r, got, want[r])
		}
	}
	// The daemon manages all of it but deletes neither the stream nor a
	// consumer.
	d := connectRole(t, url, dir, embedded.RoleDaemon)
	for _, subj := range []string{"$JS.API.STREAM.DELETE.PATROL", "$JS.API.STREAM.DELETE.KV_patrold_leader",
		"$JS.API.CONSUMER.DELETE.PATROL.patrold-outcomes"} {
		if d.Try(t, subj, nil) {
			t.Errorf("the daemon reaches %s", subj)
		}
	}
	if after := readState(t, js); !reflect.DeepEqual(after, before) {
		t.Errorf("after the attack:\n%+v\nwant\n%+v", after, before)
	}
}

// The table's rows are the permissions the server enforces: RequireUsers
// hands each role's to its nkey.
func TestRequireUsersGivesEachRoleItsPermissions(t *testing.T) {
	pubs, err := embedded.LoadOrCreateSeeds(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var opts server.Options
	embedded.RequireUsers(&opts, pubs, testNames)
	if len(opts.Nkeys) != len(embedded.Roles) {
		t.Fatalf("%d users, want %d", len(opts.Nkeys), len(embedded.Roles))
	}
	for i, r := range embedded.Roles {
		if u := opts.Nkeys[i]; u.Nkey != pubs[r] || !reflect.DeepEqual(u.Permissions, r.Permissions(testNames)) {
			t.Errorf("user %d: %+v, want %s's key and permissions", i, u, r)
		}
	}
}

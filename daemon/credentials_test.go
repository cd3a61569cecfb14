package daemon_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/bus/embedded/natstest"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/store/storetest"
)

// The embedded server of a fresh data_dir requires the credentials serve
// generated there: one 0600 nkey seed per role. A client with none, with
// a user and password, or with an nkey of its own is refused. The
// subscriber role reads findings but publishes no state-changing subject
// and cannot touch the work queue or patrold's consumers; nothing stored
// changes.
func TestEmbeddedServerRequiresCredentials(t *testing.T) {
	dir := t.TempDir()
	d := start(t, testConfig(t, dir, "", ""))

	got, err := filepath.Glob(filepath.Join(dir, "nats-*.nk"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range embedded.Roles {
		want = append(want, daemon.NATSSeedFile(dir, r))
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("seed files %q, want %q", got, want)
	}
	for _, f := range got {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v, want mode 0600", f, fi.Mode(), err)
		}
	}

	stranger := filepath.Join(t.TempDir(), "stranger.nk")
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	if err := os.WriteFile(stranger, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	strangerKey, err := nats.NkeyOptionFromSeed(stranger)
	if err != nil {
		t.Fatal(err)
	}
	for what, opts := range map[string][]nats.Option{
		"no credentials":       nil,
		"a user and password":  {nats.UserInfo("patrold", "patrold")},
		"an nkey of its own":   {strangerKey},
		"a token":              {nats.Token("patrold")},
		"the daemon's pub key": {nats.Nkey(mustPub(t, daemon.NATSSeedFile(dir, embedded.RoleDaemon)), kp.Sign)},
	} {
		nc, err := nats.Connect(d.NATSURL(), append(opts, nats.MaxReconnects(0))...)
		if err == nil {
			nc.Close()
			t.Fatalf("%s: connected", what)
		}
		if !errors.Is(err, nats.ErrAuthorization) {
			t.Fatalf("%s: %v, want an authorization violation", what, err)
		}
	}

	db := filepath.Join(dir, daemon.DBFile)
	before := storetest.DumpDB(t, db)
	nk, err := nats.NkeyOptionFromSeed(daemon.NATSSeedFile(dir, embedded.RoleSubscriber))
	if err != nil {
		t.Fatal(err)
	}
	s := natstest.ConnectAs(t, d.NATSURL(), "subscriber", nk)
	if _, err := s.NC.SubscribeSync("patrol.findings.>"); err != nil {
		t.Fatal(err)
	}
	for _, subj := range []string{"patrol.remediation.outcomes", "patrol.remediation.requests", "patrol.state.changes", "patrol.findings.resolved.critical",
		"patrold_sessions.patrol.end", "patrold_api.patrol", "patrold_seed.patrol", "patrold_trigger.patrol"} {
		s.Denied(t, "publish "+subj, "Publish", subj, func(context.Context) error { return s.NC.Publish(subj, []byte("{}")) })
	}
	s.Denied(t, "pull the work queue", "Publish", "$JS.API.CONSUMER.MSG.NEXT.PATROL.patrold-assistant",
		func(context.Context) error {
			return s.NC.Publish("$JS.API.CONSUMER.MSG.NEXT.PATROL.patrold-assistant", []byte(`{"batch":1}`))
		})
	s.Denied(t, "ack the work queue", "Publish", "$JS.ACK.PATROL.patrold-assistant.1.1.1.1.0",
		func(context.Context) error { return s.NC.Publish("$JS.ACK.PATROL.patrold-assistant.1.1.1.1.0", nil) })
	for _, durable := range []string{"patrold-assistant", daemon.OutcomesDurable} {
		s.Denied(t, "delete "+durable, "Publish", "$JS.API.CONSUMER.DELETE.PATROL."+durable,
			func(ctx context.Context) error { return s.JS.DeleteConsumer(ctx, "PATROL", durable) })
	}
	s.Denied(t, "read remediation requests", "Subscription", "patrol.remediation.requests",
		func(context.Context) error { _, err := s.NC.SubscribeSync("patrol.remediation.requests"); return err })
	s.Denied(t, "delete the stream", "Publish", "$JS.API.STREAM.DELETE.PATROL",
		func(ctx context.Context) error { return s.JS.DeleteStream(ctx, "PATROL") })
	storetest.SameDB(t, "the subscriber's attempts", storetest.DumpDB(t, db), before)
	js, err := natsAs(t, d, embedded.RoleDaemon).JetStream()
	if err != nil {
		t.Fatal(err)
	}
	for _, durable := range []string{"patrold-assistant", daemon.OutcomesDurable} {
		if _, err := js.ConsumerInfo("PATROL", durable); err != nil {
			t.Fatalf("consumer %s is gone: %v", durable, err)
		}
	}
}

func mustPub(t *testing.T, seedFile string) string {
	t.Helper()
	pub, err := embedded.LoadSeed(seedFile)
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

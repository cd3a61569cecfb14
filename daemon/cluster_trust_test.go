package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/bus/embedded/natstest"
	"github.com/patrold/patrold/bus/msgauth"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/store/storetest"
)

// Item 2 of the bus attack through two daemons in cluster mode, so
// through the wiring serve deploys (the deployment key handed from the
// daemon to its cluster member). The writer's last state change is
// republished unsigned, signed with a wrong key, and as a replay under
// another message id (its own copy is a duplicate the stream drops); an
// intruder's epoch marker, unsigned and with a wrong key.
// The standby refuses each, counts it by reason and changes nothing it
// stores; the writer's next change still replicates.
func TestForgedStateChangesRefusedThroughTheDaemon(t *testing.T) {
	srv := natstest.Server(t)
	key := testkit.KeyFile(t)
	shared := t.TempDir()
	useSnapshot(t, shared, "faults.json")
	type node struct {
		d   *daemon.Daemon
		db  string
		reg *prometheus.Registry
	}
	start := func(name string) node {
		d, reg, dir := clusterNode(t, srv.ClientURL(), key, shared, name)
		t.Cleanup(func() { d.Stop(context.Background()) })
		return node{d: d, db: filepath.Join(dir, daemon.DBFile), reg: reg}
	}
	ctx := context.Background()
	a := start("node-a")
	testkit.Eventually(t, 15*time.Second, "node-a writes", a.d.IsWriter)
	b := start("node-b")
	if _, err := a.d.RunNow(ctx, patrol.TriggerManual); err != nil {
		t.Fatal(err)
	}
	list := func(d *daemon.Daemon) []findings.Finding {
		fs, err := d.Store().List(ctx, findings.ListFilter{})
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}
	testkit.EventuallyState(t, 20*time.Second, "node-b holds node-a's findings", func() (bool, string) {
		got, want := list(b.d), list(a.d)
		return len(want) > 0 && reflect.DeepEqual(got, want), fmt.Sprintf("node-b %d findings, node-a %d", len(got), len(want))
	})

	js := natstest.JetStream(t, srv.ClientURL())
	stream, err := js.Stream(ctx, contracts.DefaultStreamName)
	if err != nil {
		t.Fatal(err)
	}
	last, err := stream.GetLastMsgForSubject(ctx, contracts.FullSubject(contracts.DefaultSubjectPrefix, contracts.SubjectStateChanges))
	if err != nil {
		t.Fatal(err)
	}
	forged := forgedChange(t, ctx, stream, last)
	wrong, err := msgauth.New([]msgauth.Key{{ID: "k1", Secret: bytes.Repeat([]byte{7}, msgauth.MinSecret)}}, msgauth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// What a refused change may move: the standby's applied stream
	// sequence and time (it is read past), nothing else.
	withoutReplica := func(db storetest.DB) storetest.DB {
		out := storetest.DB{}
		for k, v := range db {
			if k != "replica_state" {
				out[k] = v
			}
		}
		return out
	}
	before := withoutReplica(storetest.DumpDB(t, b.db))
	status, err := b.d.Store().ReplicaStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	refused := map[string]float64{}
	forge := func(what, reason string, body []byte, sign func(*nats.Msg)) {
		t.Helper()
		m := nats.NewMsg(last.Subject)
		for k, v := range last.Header {
			m.Header[k] = append([]string(nil), v...)
		}
		m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("forged-%d", time.Now().UnixNano()))
		m.Data = body
		sign(m)
		ack, err := js.PublishMsg(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		refused[reason]++
		waitRefused(t, b.reg, contracts.SubjectStateChanges, refused)
		testkit.Eventually(t, 10*time.Second, what+" read past", func() bool {
			st, err := b.d.Store().ReplicaStatus(ctx)
			return err == nil && st.AppliedSeq == ack.Sequence
		})
		storetest.SameDB(t, what, withoutReplica(storetest.DumpDB(t, b.db)), before)
		got, err := b.d.Store().ReplicaStatus(ctx)
		want := status
		want.AppliedSeq, want.AppliedAt = ack.Sequence, got.AppliedAt
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: replica status %+v, %v; want %+v", what, got, err, want)
		}
	}
	unsigned := func(m *nats.Msg) {
		for _, h := range []string{msgauth.HeaderKey, msgauth.HeaderTime, msgauth.HeaderNonce, msgauth.HeaderMAC} {
			m.Header.Del(h)
		}
	}
	forge("an unsigned state change", msgauth.ReasonUnsigned, forged, unsigned)
	forge("a state change signed with a wrong key", msgauth.ReasonBadMAC, forged, func(m *nats.Msg) { wrong.Sign(m.Subject, m.Header, m.Data) })
	forge("a replayed state change under another id", msgauth.ReasonBadMAC, last.Data, func(*nats.Msg) {})
	// A new epoch claimed by an intruder would fence the writer's next
	// change on the standby.
	marker := epochMarker(t, last)
	forge("an unsigned epoch marker", msgauth.ReasonUnsigned, marker, unsigned)
	forge("an epoch marker signed with a wrong key", msgauth.ReasonBadMAC, marker, func(m *nats.Msg) { wrong.Sign(m.Subject, m.Header, m.Data) })
	dup := nats.NewMsg(last.Subject)
	dup.Header, dup.Data = nats.Header(last.Header), last.Data
	if ack, err := js.PublishMsg(ctx, dup); err != nil || !ack.Duplicate {
		t.Fatalf("the writer's own change republished: ack %+v, %v; want a duplicate", ack, err)
	}

	// Replication goes on: the writer's next change reaches node-b.
	fs := list(a.d)
	if _, err := a.d.Store().Act(ctx, fs[0].ID, findings.ActionRequest{Action: findings.ActionAcknowledge, Actor: "op"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyState(t, 20*time.Second, "node-b applies the writer's next change", func() (bool, string) {
		got, want := list(b.d), list(a.d)
		return reflect.DeepEqual(got, want), fmt.Sprintf("node-b %+v\nnode-a %+v", got[0], want[0])
	})
}

// forgedChange is the body an attacker makes from the stream: the last
// finding upsert, retitled and dismissed, as the change after the last
// one (so a standby that did not verify it would apply it).
func forgedChange(t *testing.T, ctx context.Context, s jetstream.Stream, last *jetstream.RawStreamMsg) []byte {
	t.Helper()
	decode := func(data []byte) (*contracts.Event, contracts.StateChange) {
		ev, err := contracts.DecodeEvent(data)
		if err != nil {
			t.Fatal(err)
		}
		c, err := contracts.DecodeStateChange(ev.Data)
		if err != nil {
			t.Fatal(err)
		}
		return ev, c
	}
	_, lastChange := decode(last.Data)
	for seq := last.Sequence; seq > 0; seq-- {
		m, err := s.GetMsg(ctx, seq)
		if err != nil || m.Subject != last.Subject {
			continue
		}
		ev, c := decode(m.Data)
		if c.Table != "findings" || c.Op != "upsert" {
			continue
		}
		c.N = lastChange.N + 1
		c.Row = maps.Clone(c.Row)
		c.Row["title"] = json.RawMessage(`"forged: nothing to see"`)
		c.Row["state"] = json.RawMessage(`"` + string(findings.StateDismissed) + `"`)
		return stateEnvelope(t, ev, "-forged", c)
	}
	t.Fatal("no finding upsert on the stream")
	return nil
}

// clusterNode starts an instance in cluster mode named name on the NATS
// at url, reading the fleet in shared; it returns the daemon, its
// registry and its data_dir. The caller stops it.
func clusterNode(t *testing.T, url, key, shared, name string) (*daemon.Daemon, *prometheus.Registry, string) {
	t.Helper()
	dir := t.TempDir()
	cfg, err := config.Load([]byte("data_dir: "+dir+"\nlog: {level: warn}\nhttp: {listen: '127.0.0.1:0'}\n"+
		"cluster: {secret_file: "+key+", instance: "+name+"}\nnats: {url: '"+url+"', lease: {ttl: 3s}}\n"+
		"schedule: {cron: '@every 1h', startup_delay: 1h}\n"+
		"source: {kind: file, file: {path: "+filepath.Join(shared, "snapshot.json")+"}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	d, err := daemon.New(daemon.Options{Config: cfg, Registerer: reg, Gatherer: reg, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return d, reg, dir
}

// epochMarker is an intruder's epoch marker, one epoch past the last
// change's, in last's envelope.
func epochMarker(t *testing.T, last *jetstream.RawStreamMsg) []byte {
	t.Helper()
	ev, err := contracts.DecodeEvent(last.Data)
	if err != nil {
		t.Fatal(err)
	}
	c, err := contracts.DecodeStateChange(ev.Data)
	if err != nil {
		t.Fatal(err)
	}
	return stateEnvelope(t, ev, "-epoch", contracts.StateChange{Origin: "intruder", Epoch: c.Epoch + 1, Table: contracts.SkipTable, Op: contracts.OpEpoch})
}

// stateEnvelope is c as a state-change event in ev's envelope, its id
// ev's with suffix.
func stateEnvelope(t *testing.T, ev *contracts.Event, suffix string, c contracts.StateChange) []byte {
	t.Helper()
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	body, err := contracts.AppendEnvelope(nil, contracts.OutboxEvent{ID: ev.ID + suffix, Type: ev.Type, Subject: contracts.SubjectStateChanges,
		Data: data, Time: ev.Time}, ev.Source)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

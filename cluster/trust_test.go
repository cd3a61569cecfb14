package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/bus/msgauth"
	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/store/storetest"
)

// testKeys is the test deployment key (testkit.KeyFile's).
func testKeys(t *testing.T) []msgauth.Key {
	t.Helper()
	keys, err := msgauth.LoadFile(testkit.KeyFile(t))
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// testAuth signs with the test key; now, when set, is its clock.
func testAuth(t *testing.T, now func() time.Time) *msgauth.Auth {
	t.Helper()
	a, err := msgauth.New(testKeys(t), msgauth.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// testGuard is a guard over the test key, counting refusals on reg.
func testGuard(t *testing.T, reg prometheus.Registerer, now func() time.Time) *bus.Guard {
	t.Helper()
	g, err := bus.NewGuard(testAuth(t, now), nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// wrongAuth signs under the test key's id with another secret.
func wrongAuth(t *testing.T) *msgauth.Auth {
	t.Helper()
	a, err := msgauth.New([]msgauth.Key{{ID: testKeys(t)[0].ID, Secret: make([]byte, 32)}}, msgauth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// wantRefused compares patrold_bus_refused_total on g with want (by
// subject and reason; every other pair zero).
func wantRefused(g prometheus.Gatherer, want map[[2]string]float64) error {
	var b strings.Builder
	b.WriteString("# HELP patrold_bus_refused_total State-changing NATS messages refused because they did not authenticate with the deployment key, by subject and reason.\n# TYPE patrold_bus_refused_total counter\n")
	for _, s := range contracts.SignedSubjects {
		for _, r := range msgauth.Reasons {
			fmt.Fprintf(&b, "patrold_bus_refused_total{reason=%q,subject=%q} %g\n", r, s, want[[2]string{s, r}])
		}
	}
	return testutil.GatherAndCompare(g, strings.NewReader(b.String()), "patrold_bus_refused_total")
}

// Item 2 of the bus attack: state changes forged from the stream's last
// one (the epoch and change number read off it, the finding retitled and
// dismissed). The standby refuses them unless signed with the deployment
// key. Unsigned, wrong-key, stale and replayed copies leave its database
// as it was: the applied sequence advances past each, nothing else. The
// writer's next change still applies, with no gap.
func TestForgedStateChangesRefused(t *testing.T) {
	ctx := context.Background()
	o := bus.DefaultOptions()
	o.Embedded.Listen = "127.0.0.1:0"
	o.Embedded.StoreDir = t.TempDir()
	a := newNode(t, o, "a")
	reg := prometheus.NewRegistry()
	applied := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	b := newGuardedNode(t, clientOf(a), "b", testGuard(t, reg, nil), func() time.Time { return applied })
	replicate(t, 1, a, b)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	commitRun(t, a.st, now, obs("vm-1", "cpu"))
	a.rel.Kick()
	caughtUp(t, a, b.f)

	s, err := a.b.JetStream().Stream(ctx, a.b.StreamName())
	if err != nil {
		t.Fatal(err)
	}
	last, err := s.GetLastMsgForSubject(ctx, b.f.FullSubject())
	if err != nil {
		t.Fatal(err)
	}
	// The last finding upsert on the stream, as an attacker reads it.
	var ev *contracts.Event
	var c contracts.StateChange
	for seq := last.Sequence; seq > 0 && c.Table != "findings"; seq-- {
		m, err := s.GetMsg(ctx, seq)
		if err != nil || m.Subject != b.f.FullSubject() {
			continue
		}
		if ev, err = contracts.DecodeEvent(m.Data); err != nil {
			t.Fatal(err)
		}
		if c, err = contracts.DecodeStateChange(ev.Data); err != nil {
			t.Fatal(err)
		}
		if c.Op != "upsert" {
			c.Table = ""
		}
	}
	if c.Table != "findings" {
		t.Fatal("no finding upsert on the stream")
	}
	lastChange, err := cluster.Decode(last.Data)
	if err != nil {
		t.Fatal(err)
	}
	forgedChange := c
	forgedChange.N = lastChange.N + 1 // the next change number
	forgedChange.Row = map[string]json.RawMessage{}
	for k, v := range c.Row {
		forgedChange.Row[k] = v
	}
	forgedChange.Row["title"] = json.RawMessage(`"forged: nothing to see"`)
	forgedChange.Row["state"] = json.RawMessage(`"` + string(findings.StateDismissed) + `"`)
	body := stateEvent(t, ev, forgedChange)

	db := filepath.Join(filepath.Dir(b.st.Path()), "patrold.db")
	before := storetest.DumpDB(t, db)
	status, err := b.st.ReplicaStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	refused := map[[2]string]float64{}
	publish := func(what, reason string, m *nats.Msg) {
		t.Helper()
		ack, err := a.b.JetStream().PublishMsg(ctx, m)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		refused[[2]string{contracts.SubjectStateChanges, reason}]++
		testkit.EventuallyState(t, 10*time.Second, what+" refused", func() (bool, string) {
			err := wantRefused(reg, refused)
			return err == nil, fmt.Sprint(err)
		})
		testkit.Eventually(t, 10*time.Second, what+" passed", func() bool {
			st, err := b.st.ReplicaStatus(ctx)
			return err == nil && st.AppliedSeq == ack.Sequence
		})
		after := storetest.DumpDB(t, db)
		delete(after, "replica_state")
		want := maps(before)
		delete(want, "replica_state")
		storetest.SameDB(t, what, after, want)
		status.AppliedSeq, status.AppliedAt = ack.Sequence, &applied
		if got, err := b.st.ReplicaStatus(ctx); err != nil || !reflect.DeepEqual(got, status) {
			t.Fatalf("%s: replica status %+v, %v; want %+v", what, got, err, status)
		}
	}
	msg := func(id string, auth *msgauth.Auth) *nats.Msg {
		m := nats.NewMsg(b.f.FullSubject())
		m.Header.Set(jetstream.MsgIDHeader, id)
		m.Header.Set(bus.HeaderContentType, contracts.ContentTypeEvent)
		m.Data = body
		if auth != nil {
			auth.Sign(m.Subject, m.Header, m.Data)
		}
		return m
	}
	publish("unsigned change", msgauth.ReasonUnsigned, msg("forged-1", nil))
	publish("wrong-key change", msgauth.ReasonBadMAC, msg("forged-2", wrongAuth(t)))
	publish("stale change", msgauth.ReasonStale, msg("forged-3", testAuth(t, func() time.Time { return time.Now().Add(-10 * time.Minute) })))
	// The writer's own last change, stored and signed, republished under
	// another message id: the id is covered by the MAC.
	replay := &nats.Msg{Subject: last.Subject, Header: last.Header, Data: last.Data}
	replay.Header.Set(jetstream.MsgIDHeader, "replayed")
	publish("replayed change", msgauth.ReasonBadMAC, replay)

	// The writer goes on: its next change applies on the standby, no gap.
	commitRun(t, a.st, now.Add(time.Hour), obs("vm-1", "cpu"), obs("vm-2", "disk"))
	a.rel.Kick()
	caughtUp(t, a, b.f)
	want, _ := a.st.List(ctx, findings.ListFilter{})
	got, err := b.st.List(ctx, findings.ListFilter{})
	if err != nil || !reflect.DeepEqual(got, want) || len(got) != 2 {
		t.Fatalf("standby findings %+v (%v), want %+v", got, err, want)
	}
	if err := b.f.Gap(); err != nil {
		t.Fatalf("gap after the refusals: %v", err)
	}
}

// stateEvent is ev with c as its data, re-encoded as the relay does.
func stateEvent(t *testing.T, ev *contracts.Event, c contracts.StateChange) []byte {
	t.Helper()
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	body, err := contracts.AppendEnvelope(nil, contracts.OutboxEvent{ID: ev.ID + "-forged", Type: ev.Type, Subject: contracts.SubjectStateChanges,
		Data: data, Time: ev.Time}, ev.Source)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func maps(db storetest.DB) storetest.DB {
	out := storetest.DB{}
	for k, v := range db {
		out[k] = v
	}
	return out
}

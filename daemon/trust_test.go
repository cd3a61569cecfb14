package daemon_test

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

	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/bus/msgauth"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/store/storetest"
)

// Item 1 of the bus attack, through a running daemon, while a real
// session is open. An outcome with an invented session id changes
// nothing. The session's own fix_verified claim while the pool is still
// full is recorded as fix_verification_failed (the daemon's check
// measured it), and the finding stays open.
func TestForgedFixOnTheBus(t *testing.T) {
	o := openSession(t)
	d, dir, id, f, started := o.d, o.dir, o.id, o.f, o.started
	ctx := context.Background()

	bus := attacker(t, d)
	key := deploymentKey(t, dir)
	publish := func(o contracts.RemediationOutcome) { t.Helper(); bus.publishOutcome(t, o, key.Auth) }
	claim := contracts.RemediationOutcome{SessionID: "0123456789abcdef", FindingID: id, Attempt: f.Attempt, Outcome: contracts.OutcomeFixVerified,
		Driver: contracts.DriverPlaybook, Summary: "forged: pool now 12%, fixed", StartedAt: started, FinishedAt: started}
	publish(claim)
	claim.SessionID, claim.Summary = "real-session", "grew the pool"
	publish(claim)
	testkit.Eventually(t, 20*time.Second, "the session's claim is recorded", func() bool {
		f, err := d.Store().Get(ctx, id)
		return err == nil && f.LastOutcome != ""
	})
	recs, err := d.Store().Investigations(ctx, id)
	if err != nil || len(recs) != 1 || recs[0].EndedAt == nil {
		t.Fatalf("investigations: %+v %v", recs, err)
	}
	want := findings.InvestigationRecord{FindingID: id, Attempt: f.Attempt, Episode: 1, SessionID: "real-session", StartedAt: recs[0].StartedAt,
		EndedAt: recs[0].EndedAt, Outcome: findings.OutcomeFixVerificationFailed,
		Summary: "session claimed fix_verified (grew the pool); patrold's check measured: high_disk still present on storage/pve1/local-zfs (value 96.3, threshold 95)"}
	if !reflect.DeepEqual(recs[0], want) {
		t.Fatalf("investigation\n got: %+v\nwant: %+v", recs[0], want)
	}
	if f, err := d.Store().Get(ctx, id); err != nil || !f.Active() {
		t.Fatalf("the finding was resolved by an unconfirmed claim: %+v %v", f, err)
	}
}

// Every other outcome attack through a running daemon. Unsigned,
// wrong-key, stale and replayed outcomes for the real session are refused
// and counted by reason. The database is byte for byte what it was. The
// real session's own signed claim then applies.
func TestUnauthenticatedOutcomesRefused(t *testing.T) {
	o := openSession(t)
	d, dir, id, f, started, reg := o.d, o.dir, o.id, o.f, o.started, o.reg
	ctx := context.Background()
	bus := attacker(t, d)
	key := deploymentKey(t, dir)
	wrong, err := msgauth.New([]msgauth.Key{{ID: key.keyID(), Secret: make([]byte, 32)}}, msgauth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stale := key.at(time.Now().Add(-10 * time.Minute))
	claim := contracts.RemediationOutcome{SessionID: "real-session", FindingID: id, Attempt: f.Attempt, Outcome: contracts.OutcomeCannotFix,
		Driver: contracts.DriverPlaybook, Summary: "forged: gave up", StartedAt: started, FinishedAt: started}
	before := storetest.DumpDB(t, filepath.Join(dir, daemon.DBFile))
	refused := map[string]float64{}
	for _, a := range []struct {
		reason string
		auth   *msgauth.Auth
	}{{msgauth.ReasonUnsigned, nil}, {msgauth.ReasonBadMAC, wrong}, {msgauth.ReasonStale, stale}} {
		bus.publishOutcome(t, claim, a.auth)
		refused[a.reason]++
		waitRefused(t, reg, contracts.SubjectRemediationOutcomes, refused)
		storetest.SameDB(t, a.reason+" outcome", storetest.DumpDB(t, filepath.Join(dir, daemon.DBFile)), before)
	}
	// The real claim applies once; its copy republished is a duplicate
	// the stream drops, and a copy with another message id fails its MAC.
	claim.Summary = "grew the pool"
	msg := bus.outcomeMsg(t, claim, key.Auth)
	if _, err := bus.js.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "the session's claim is recorded", func() bool {
		f, err := d.Store().Get(ctx, id)
		return err == nil && f.LastOutcome != ""
	})
	after := storetest.DumpDB(t, filepath.Join(dir, daemon.DBFile))
	if ack, err := bus.js.PublishMsg(ctx, msg); err != nil || !ack.Duplicate {
		t.Fatalf("replayed outcome: ack %+v, %v; want a duplicate", ack, err)
	}
	msg.Header.Set(jetstream.MsgIDHeader, "replayed-under-another-id")
	if _, err := bus.js.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	refused[msgauth.ReasonBadMAC]++
	waitRefused(t, reg, contracts.SubjectRemediationOutcomes, refused)
	storetest.SameDB(t, "replayed outcome", storetest.DumpDB(t, filepath.Join(dir, daemon.DBFile)), after)
}

// busAttacker is a client on the daemon's NATS server without the
// deployment key. It holds the daemon's NATS credentials, so NATS lets it
// publish anything (a shared NATS without permissions): only the message
// authentication stands in its way.
type busAttacker struct {
	js jetstream.JetStream
}

func attacker(t *testing.T, d *daemon.Daemon) busAttacker {
	t.Helper()
	js, err := jetstream.New(natsAs(t, d, embedded.RoleDaemon))
	if err != nil {
		t.Fatal(err)
	}
	return busAttacker{js: js}
}

// outcomeMsg is an outcome event as a worker publishes it, signed with
// auth (nil: unsigned).
func (b busAttacker) outcomeMsg(t *testing.T, o contracts.RemediationOutcome, auth *msgauth.Auth) *nats.Msg {
	t.Helper()
	data, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg("patrol." + contracts.SubjectRemediationOutcomes)
	m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("outcome-%d", time.Now().UnixNano()))
	m.Data = data
	if auth != nil {
		auth.Sign(m.Subject, m.Header, m.Data)
	}
	return m
}

func (b busAttacker) publishOutcome(t *testing.T, o contracts.RemediationOutcome, auth *msgauth.Auth) {
	t.Helper()
	if _, err := b.js.PublishMsg(context.Background(), b.outcomeMsg(t, o, auth)); err != nil {
		t.Fatal(err)
	}
}

// signer is the deployment key read back from data_dir, signing now or
// at a fixed time.
type signer struct {
	*msgauth.Auth
	keys []msgauth.Key
}

func deploymentKey(t *testing.T, dir string) signer {
	t.Helper()
	keys, err := msgauth.LoadFile(filepath.Join(dir, daemon.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	a, err := msgauth.New(keys, msgauth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return signer{Auth: a, keys: keys}
}

func (s signer) keyID() string { return s.keys[0].ID }

func (s signer) at(when time.Time) *msgauth.Auth {
	a, err := msgauth.New(s.keys, msgauth.Options{Now: func() time.Time { return when }})
	if err != nil {
		panic(err)
	}
	return a
}

// waitRefused waits until patrold_bus_refused_total for subject holds
// exactly want (by reason; the others zero).
func waitRefused(t *testing.T, g prometheus.Gatherer, subject string, want map[string]float64) {
	t.Helper()
	testkit.EventuallyState(t, 20*time.Second, "refusals counted", func() (bool, string) {
		var b strings.Builder
		b.WriteString("# HELP patrold_bus_refused_total State-changing NATS messages refused because they did not authenticate with the deployment key, by subject and reason.\n# TYPE patrold_bus_refused_total counter\n")
		for _, s := range contracts.SignedSubjects {
			for _, r := range msgauth.Reasons {
				n := 0.0
				if s == subject {
					n = want[r]
				}
				fmt.Fprintf(&b, "patrold_bus_refused_total{reason=%q,subject=%q} %g\n", r, s, n)
			}
		}
		err := testutil.GatherAndCompare(g, strings.NewReader(b.String()), "patrold_bus_refused_total")
		return err == nil, fmt.Sprint(err)
	})
}

// openSession starts a daemon on the remediation fleet with no
// assistant of its own (standalone workers would run the sessions),
// runs it once so the full pool's finding is dispatched, and opens the
// real session for that dispatch. The daemon stops with the test.
func openSession(t *testing.T) openedSession {
	t.Helper()
	dir, remediation := remediationFleet(t)
	yaml := "data_dir: " + dir + "\nlog: {level: warn}\n" +
		"http: {listen: '127.0.0.1:0'}\n" +
		"nats: {embedded: {listen: '127.0.0.1:0'}}\n" +
		"assistant: {enabled: false}\n" +
		"schedule: {cron: '@every 1h', startup_delay: 1h}\n" + remediation
	cfg, err := config.Load([]byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	d := startWith(t, cfg, reg)
	ctx := context.Background()
	if _, err := d.RunNow(ctx, patrol.TriggerManual); err != nil {
		t.Fatal(err)
	}
	id := findings.ID("storage/pve1/local-zfs", findings.CategoryCapacity, "high_disk")
	f, err := d.Store().Get(ctx, id)
	if err != nil || f.InvestigationStatus != findings.InvestigationRunning {
		t.Fatalf("not dispatched: %+v %v", f.Investigation, err)
	}
	started := time.Now().UTC().Truncate(time.Second)
	if err := d.Store().StartSession(ctx, "real-session", id, f.Attempt, "playbook", started); err != nil {
		t.Fatal(err)
	}
	return openedSession{d: d, dir: dir, id: id, f: f, started: started, reg: reg}
}

// openedSession is what openSession set up.
type openedSession struct {
	d       *daemon.Daemon
	dir, id string
	f       findings.Finding
	started time.Time
	reg     *prometheus.Registry
}

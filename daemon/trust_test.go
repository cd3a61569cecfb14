package daemon_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/patrol"
)

// Item 1 of the bus attack, through a running daemon: while a real
// session is open, an outcome with an invented session id changes
// nothing, and the session's own fix_verified claim while the pool is
// still full is recorded as fix_verification_failed (the daemon's check
// measured it), the finding staying open.
func TestForgedFixOnTheBus(t *testing.T) {
	dir, remediation := remediationFleet(t)
	yaml := "data_dir: " + dir + "\nlog: {level: warn}\n" +
		"http: {listen: '127.0.0.1:0'}\n" +
		"nats: {embedded: {listen: '127.0.0.1:0'}}\n" +
		"assistant: {enabled: false}\n" + // standalone workers would run the sessions
		"schedule: {cron: '@every 1h', startup_delay: 1h}\n" + remediation
	cfg, err := config.Load([]byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	d, err := daemon.New(daemon.Options{Config: cfg, Registerer: reg, Gatherer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer d.Stop(ctx)
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

	nc, err := nats.Connect(d.NATSURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	publish := func(o contracts.RemediationOutcome) {
		t.Helper()
		data, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish("patrol."+contracts.SubjectRemediationOutcomes, data); err != nil {
			t.Fatal(err)
		}
	}
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

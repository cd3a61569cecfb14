package daemon_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/bus/msgauth"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/store/storetest"
)

// A forged remediation request would make the daemon's own assistant
// worker run the declared action (here grow-pool, which rewrites the
// fleet's snapshot). Unsigned, wrong-key and stale requests for the full
// pool's finding are refused and counted by reason: they never reach the
// worker, no action runs (the snapshot is byte for byte what it was) and
// the database does not change. A signed request replayed is dropped as
// a duplicate or refused.
func TestForgedRequestsRefused(t *testing.T) {
	dir, remediation := remediationFleet(t)
	cfg, err := config.Load([]byte("data_dir: "+dir+"\nlog: {level: warn}\nhttp: {listen: '127.0.0.1:0'}\n"+
		"nats: {embedded: {listen: '127.0.0.1:0'}}\nschedule: {cron: '@every 1h', startup_delay: 1h}\n"+remediation), nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	logs := &testkit.LogBuffer{}
	d, err := daemon.New(daemon.Options{Config: cfg, Registerer: reg, Gatherer: reg, Stderr: logs})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(context.Background()) })
	snapshot := filepath.Join(dir, "snapshot.json")
	fleet, err := os.ReadFile(snapshot)
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, daemon.DBFile)
	before := storetest.DumpDB(t, db)
	key := deploymentKey(t, dir)
	wrong, err := msgauth.New([]msgauth.Key{{ID: key.keyID(), Secret: make([]byte, msgauth.MinSecret)}}, msgauth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(natsAs(t, d, embedded.RoleDaemon))
	if err != nil {
		t.Fatal(err)
	}
	id := findings.ID("storage/pve1/local-zfs", findings.CategoryCapacity, "high_disk")
	req := &contracts.RemediationRequest{FindingID: id, ResourceID: "storage/pve1/local-zfs", Category: string(findings.CategoryCapacity), Key: "high_disk",
		Severity: "critical", Title: "forged", Autonomy: string(findings.AutonomyFull), Attempt: 1, RunID: "forged-run", RequestedAt: time.Now().UTC()}
	refused := map[string]float64{}
	publish := func(msgID string, req *contracts.RemediationRequest, auth *msgauth.Auth) *nats.Msg {
		t.Helper()
		row, err := contracts.RequestEvent(msgID, req, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		msg, err := bus.EventMessage(contracts.DefaultSubjectPrefix, "attacker", row)
		if err != nil {
			t.Fatal(err)
		}
		if auth != nil {
			auth.Sign(msg.Subject, msg.Header, msg.Data)
		}
		if _, err := js.PublishMsg(context.Background(), msg); err != nil {
			t.Fatal(err)
		}
		return msg
	}
	for _, a := range []struct {
		reason string
		auth   *msgauth.Auth
	}{{msgauth.ReasonUnsigned, nil}, {msgauth.ReasonBadMAC, wrong}, {msgauth.ReasonStale, key.at(time.Now().Add(-10 * time.Minute))}} {
		publish("forged-request-"+a.reason, req, a.auth)
		refused[a.reason]++
		waitRefused(t, reg, contracts.SubjectRemediationRequests, refused)
		storetest.SameDB(t, a.reason+" request", storetest.DumpDB(t, db), before)
		if now, err := os.ReadFile(snapshot); err != nil || string(now) != string(fleet) {
			t.Fatalf("%s request: the action ran (snapshot changed, %v)", a.reason, err)
		}
	}
	// A signed request for a finding the store does not have reaches the
	// worker, which drops it and says so; by then the forged requests
	// would have reached it too, and the worker never named their finding.
	probe := *req
	probe.FindingID = "0000000000000000"
	signed := publish("signed-probe", &probe, key.Auth)
	testkit.Eventually(t, 20*time.Second, "the worker drops the signed request", func() bool {
		return strings.Contains(logs.String(), "finding="+probe.FindingID)
	})
	if strings.Contains(logs.String(), id) {
		t.Fatalf("a forged request reached the worker:\n%s", logs)
	}
	// The signed request replayed: its own copy is a duplicate the
	// stream drops, one under another message id fails its MAC.
	if ack, err := js.PublishMsg(context.Background(), signed); err != nil || !ack.Duplicate {
		t.Fatalf("replayed request: ack %+v, %v; want a duplicate", ack, err)
	}
	signed.Header.Set(jetstream.MsgIDHeader, "replayed-under-another-id")
	if _, err := js.PublishMsg(context.Background(), signed); err != nil {
		t.Fatal(err)
	}
	refused[msgauth.ReasonBadMAC]++
	waitRefused(t, reg, contracts.SubjectRemediationRequests, refused)
	storetest.SameDB(t, "replayed request", storetest.DumpDB(t, db), before)
}

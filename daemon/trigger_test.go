package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/bus/msgauth"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/store/storetest"
)

// triggerMsg is a trigger request on the daemon's prefix, signed with
// auth (nil: unsigned).
func triggerMsg(t *testing.T, req contracts.TriggerRequest, auth *msgauth.Auth) *nats.Msg {
	t.Helper()
	data, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return rawTriggerMsg(data, auth)
}

func rawTriggerMsg(data []byte, auth *msgauth.Auth) *nats.Msg {
	m := nats.NewMsg(contracts.TriggerSubject(contracts.DefaultSubjectPrefix))
	m.Data = data
	if auth != nil {
		auth.Sign(m.Subject, m.Header, m.Data)
	}
	return m
}

// askTrigger sends m and decodes the answer; verify, when set, must
// have signed it for m.
func askTrigger(t *testing.T, nc *nats.Conn, m *nats.Msg, verify *msgauth.Auth) contracts.TriggerAnswer {
	t.Helper()
	ans, err := nc.RequestMsg(m, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if verify != nil {
		if err := verify.VerifyAnswer(m.Subject, m.Header, ans.Header, ans.Data); err != nil {
			t.Fatalf("the writer's answer does not verify: %v", err)
		}
	}
	var a contracts.TriggerAnswer
	if err := json.Unmarshal(ans.Data, &a); err != nil {
		t.Fatalf("answer %s: %v", ans.Data, err)
	}
	return a
}

func runCount(t *testing.T, d *daemon.Daemon) int {
	t.Helper()
	runs, _, err := d.Store().RunsPage(context.Background(), findings.Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	return len(runs)
}

// TestNATSTriggerAttacks: forged, unsigned, stale and replayed trigger
// requests on the NATS subject start no run, are answered
// unauthenticated and are counted by reason; a request the scope rule
// refuses is answered invalid, naming the field. The one signed request
// starts the scoped run, with trigger alert, its resources and reason.
func TestNATSTriggerAttacks(t *testing.T) {
	dir := t.TempDir()
	cfg, _ := slowConfig(t, dir, "0")
	reg := prometheus.NewRegistry()
	d := startWith(t, cfg, reg)
	key := deploymentKey(t, dir)
	nc := natsAs(t, d, embedded.RoleDaemon)
	wrong, err := msgauth.New([]msgauth.Key{{ID: key.keyID(), Secret: make([]byte, 32)}}, msgauth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := msgauth.New([]msgauth.Key{{ID: "intruder", Secret: make([]byte, 32)}}, msgauth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := contracts.TriggerRequest{Resources: []string{"node/pve1"}, Reason: "monitor: HostDown"}
	db := filepath.Join(dir, daemon.DBFile)
	before := storetest.DumpDB(t, db)
	refused := map[string]float64{}
	for _, a := range []struct {
		reason string
		auth   *msgauth.Auth
	}{{msgauth.ReasonUnsigned, nil}, {msgauth.ReasonBadMAC, wrong}, {msgauth.ReasonUnknownKey, other},
		{msgauth.ReasonStale, key.at(time.Now().Add(-10 * time.Minute))}} {
		got := askTrigger(t, nc, triggerMsg(t, req, a.auth), nil)
		if got.Outcome != contracts.TriggerUnauthenticated || !reflect.DeepEqual(got.Resources, []string{}) || got.RunID != "" ||
			!strings.Contains(got.Error, "message refused: "+a.reason) {
			t.Fatalf("%s trigger answered %+v, want unauthenticated naming %s", a.reason, got, a.reason)
		}
		refused[a.reason]++
		waitRefused(t, reg, contracts.StemTrigger, refused)
	}
	// Signed but unfit: the field is named, nothing starts.
	for body, want := range map[string]string{
		`{"resources": [], "reason": "x"}`:                  "trigger request: resources: required, at least one resource id",
		`{"resource": ["node/pve1"]}`:                       `trigger request: json: unknown field "resource"`,
		`{"resources": ["node/pve1", " "]}`:                 "resources[1]: empty",
		`{"resources": ["node/pve1"], "reason": "a\u0007"}`: "reason: control characters",
		`{"resources": ["node/pve1"]} {"more": 1}`:          "trigger request: data after the JSON object",
		`{"resources": "node/pve1", "reason": "x y"}`:       "trigger request: json: cannot unmarshal string",
	} {
		got := askTrigger(t, nc, rawTriggerMsg([]byte(body), key.Auth), key.Auth)
		if got.Outcome != contracts.TriggerInvalid || !reflect.DeepEqual(got.Resources, []string{}) || !strings.Contains(got.Error, want) {
			t.Fatalf("%s answered %+v, want invalid with %q", body, got, want)
		}
	}
	if n := runCount(t, d); n != 0 {
		t.Fatalf("%d runs after refused triggers, want none", n)
	}
	storetest.SameDB(t, "refused triggers", storetest.DumpDB(t, db), before)

	signed := triggerMsg(t, req, key.Auth)
	got := askTrigger(t, nc, signed, key.Auth)
	if want := (contracts.TriggerAnswer{Outcome: string(patrol.TriggerTaken), RunID: got.RunID, Resources: req.Resources}); got.RunID == "" || !reflect.DeepEqual(got, want) {
		t.Fatalf("signed trigger answered %+v, want %+v", got, want)
	}
	var rep struct {
		RunID   string        `json:"run_id"`
		Trigger string        `json:"trigger"`
		Scope   *patrol.Scope `json:"scope"`
	}
	testkit.EventuallyState(t, 30*time.Second, "the triggered run finishes", func() (bool, string) {
		full, err := d.Store().Run(context.Background(), got.RunID)
		if err != nil || full.FinishedAt == nil {
			return false, "running"
		}
		return json.Unmarshal(full.Report, &rep) == nil, string(full.Report)
	})
	if rep.RunID != got.RunID || rep.Trigger != string(patrol.TriggerAlert) || rep.Scope == nil ||
		!reflect.DeepEqual(*rep.Scope, patrol.Scope{Resources: req.Resources, Reason: req.Reason, Patrolled: rep.Scope.Patrolled}) {
		t.Fatalf("run %s trigger %q scope %+v, want alert over %v for %q", rep.RunID, rep.Trigger, rep.Scope, req.Resources, req.Reason)
	}
	// The very message again: its nonce was seen, so it is a replay
	// (not a rate-limited request) and starts nothing. The run's rows are
	// all published first, so the database is at rest.
	testkit.Eventually(t, 30*time.Second, "the run's outbox rows are published", func() bool {
		n, err := d.Store().PendingCount(context.Background())
		return err == nil && n == 0
	})
	ran := storetest.DumpDB(t, db)
	again := askTrigger(t, nc, signed, nil)
	if again.Outcome != contracts.TriggerUnauthenticated || !strings.Contains(again.Error, "message refused: "+msgauth.ReasonReplayed) {
		t.Fatalf("replayed trigger answered %+v, want unauthenticated (replayed)", again)
	}
	refused[msgauth.ReasonReplayed]++
	waitRefused(t, reg, contracts.StemTrigger, refused)
	if n := runCount(t, d); n != 1 {
		t.Fatalf("%d runs, want the one signed trigger's", n)
	}
	storetest.SameDB(t, "replayed trigger", storetest.DumpDB(t, db), ran)
	gotM := metricLines(t, d, "patrold_patrol_triggers_total")
	wantM := []string{`patrold_patrol_triggers_total{outcome="coalesced"} 0`, `patrold_patrol_triggers_total{outcome="refused"} 0`, `patrold_patrol_triggers_total{outcome="taken"} 1`}
	if !reflect.DeepEqual(gotM, wantM) {
		t.Fatalf("trigger metrics %q, want %q", gotM, wantM)
	}
}

// TestNATSTriggerOnlyTheWriter: in cluster mode the writer takes every
// trigger request; a standby does not listen on the subject, so its
// trigger counter stays at zero.
func TestNATSTriggerOnlyTheWriter(t *testing.T) {
	c := oneServerCluster(t)
	node := c.node
	a := node("node-a")
	testkit.Eventually(t, 10*time.Second, "node-a is the writer", a.IsWriter)
	b := node("node-b")
	testkit.Eventually(t, 10*time.Second, "node-b is up", func() bool {
		res, err := http.Get("http://" + b.HTTPAddr() + "/readyz")
		if err == nil {
			res.Body.Close()
		}
		return err == nil && res.StatusCode == http.StatusOK
	})
	keys, err := msgauth.LoadFile(c.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := msgauth.New(keys, msgauth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(c.url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// Eight requests: a standby in the queue group would take about
	// half of them.
	for _, id := range []string{"node/pve1", "node/pve2", "vm/101", "vm/102", "container/201", "storage/pve1/local-zfs", "disk/pve1/sda", "disk/pve1/sdb"} {
		got := askTrigger(t, nc, triggerMsg(t, contracts.TriggerRequest{Resources: []string{id}}, auth), auth)
		if got.Outcome != string(patrol.TriggerTaken) && got.Outcome != string(patrol.TriggerRefused) && got.Outcome != string(patrol.TriggerCoalesced) {
			t.Fatalf("trigger for %s answered %+v", id, got)
		}
	}
	zero := []string{`patrold_patrol_triggers_total{outcome="coalesced"} 0`, `patrold_patrol_triggers_total{outcome="refused"} 0`, `patrold_patrol_triggers_total{outcome="taken"} 0`}
	if got := metricLines(t, b, "patrold_patrol_triggers_total"); !reflect.DeepEqual(got, zero) {
		t.Fatalf("standby trigger metrics %q, want %q", got, zero)
	}
	var taken float64
	for _, l := range metricLines(t, a, "patrold_patrol_triggers_total") {
		n, err := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
		if err != nil {
			t.Fatal(err)
		}
		taken += n
	}
	if taken != 8 {
		t.Fatalf("the writer counted %g trigger requests, want 8", taken)
	}
}

// TestTriggerSenderOnARestrictedUser: `patrold trigger` against a NATS of
// the operator's own, as a user allowed only the trigger subject and its
// inbox, reaches the writer and starts the scoped run. The attack is a
// sender that also ensures the stream: that user may not, and the
// trigger would wait and fail instead of being sent.
func TestTriggerSenderOnARestrictedUser(t *testing.T) {
	sopts, err := embedded.ServerOptions("127.0.0.1:0", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sopts.Users = []*server.User{
		{Username: "writer", Password: "writer-pass"},
		{Username: "monitor", Password: "monitor-pass", Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{contracts.TriggerSubject(contracts.DefaultSubjectPrefix)}},
			Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>"}},
		}},
	}
	srv, err := embedded.StartServer(sopts, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	dir := t.TempDir()
	cfg, _ := slowConfig(t, dir, "0")
	cfg.NATS.URL, cfg.NATS.User, cfg.NATS.Password = srv.ClientURL(), "writer", "writer-pass"
	d := start(t, cfg)
	sender := *cfg
	sender.NATS.User, sender.NATS.Password = "monitor", "monitor-pass"
	root, err := daemon.NewRoot(&sender, daemon.RootOptions{Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	req := contracts.TriggerRequest{Resources: []string{"node/pve1"}, Reason: "HostDown on pve1"}
	ans, err := root.SendTrigger(ctx, req.Resources, req.Reason)
	if err != nil {
		t.Fatalf("trigger as the restricted user: %v", err)
	}
	if want := (contracts.TriggerAnswer{Outcome: string(patrol.TriggerTaken), RunID: ans.RunID, Resources: req.Resources}); ans.RunID == "" || !reflect.DeepEqual(ans, want) {
		t.Fatalf("answer %+v, want %+v", ans, want)
	}
	testkit.Eventually(t, 30*time.Second, "the triggered run is recorded", func() bool { return runCount(t, d) == 1 })
}

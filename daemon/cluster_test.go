package daemon_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/bus/embedded/natstest"
	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
)

// TestClusterFailover: three instances in cluster mode on a three-node
// JetStream cluster (R3 stream), their assistant workers sharing the
// request consumer. The leader is killed mid-schedule (no lease release);
// a standby takes over within two lease TTLs with the findings, acks and
// silences intact, files nothing again, and every remediation request
// gets exactly one outcome.
func TestClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	urls := natstest.Cluster(t, 3)
	key := testkit.KeyFile(t)
	shared := t.TempDir()
	useSnapshot(t, shared, "faults.json")
	const ttl = 3 * time.Second
	nodes := make([]*daemon.Daemon, 3)
	cfgs := make([]*config.Config, 3)
	logs := make([]*testkit.LogBuffer, 3)
	for i := range nodes {
		dir := t.TempDir()
		// Each instance dials its own server first.
		order := append([]string{urls[i]}, append(append([]string{}, urls[:i]...), urls[i+1:]...)...)
		yaml := "data_dir: " + dir + "\nlog: {level: info, format: json}\n" +
			"http: {listen: '127.0.0.1:0', tokens: [{name: ops, token: admin-secret-0001, scope: admin}]}\n" +
			"cluster: {secret_file: " + key + ", instance: node-" + fmt.Sprint(i+1) + "}\n" +
			"nats: {url: '" + strings.Join(order, ",") + "', stream: {replicas: 3}, lease: {ttl: " + ttl.String() + "}}\n" +
			"schedule: {cron: '@every 1s', startup_delay: 1h}\n" +
			"source: {kind: file, file: {path: " + filepath.Join(shared, "snapshot.json") + "}}\n" +
			"patrol: {autonomy: full}\n" +
			"investigation: {max_concurrent: 10, max_attempts: 1}\n" +
			"actions: [{name: noop, command: [/bin/true], risk: low, kinds: [storage, node], signals: [high_disk, high_cpu]}]\n"
		cfg, err := config.Load([]byte(yaml), nil)
		if err != nil {
			t.Fatal(err)
		}
		cfgs[i] = cfg
		logs[i] = &testkit.LogBuffer{}
		reg := prometheus.NewRegistry()
		d, err := daemon.New(daemon.Options{Config: cfg, Registerer: reg, Gatherer: reg, Stderr: logs[i]})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Stop(context.Background()) })
		nodes[i] = d
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for i, l := range logs {
			for _, line := range strings.Split(l.String(), "\n") {
				if strings.Contains(line, "lease") || strings.Contains(line, "leader") || strings.Contains(line, "state") || strings.Contains(line, "catch") {
					t.Logf("node-%d: %s", i+1, line)
				}
			}
		}
	})
	writer := func() (int, bool) {
		for i, d := range nodes {
			if d != nil && d.IsWriter() {
				return i, true
			}
		}
		return -1, false
	}
	testkit.Eventually(t, 15*time.Second, "a writer", func() bool { _, ok := writer(); return ok })
	li, _ := writer()
	leader := nodes[li]
	ctx := context.Background()
	testkit.Eventually(t, 15*time.Second, "the leader files findings", func() bool {
		fs, err := leader.Store().List(ctx, findings.ListFilter{})
		return err == nil && len(fs) >= 2
	})
	fs, err := leader.Store().List(ctx, findings.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := leader.Store().Act(ctx, fs[0].ID, findings.ActionRequest{Action: findings.ActionAcknowledge, Actor: "op"}, now); err != nil {
		t.Fatal(err)
	}
	sil, err := leader.Store().AddSilence(ctx, findings.Silence{Matchers: findings.Matchers{Resource: fs[1].ResourceID},
		Comment: "maintenance", Author: "op", StartsAt: now, EndsAt: now.Add(time.Hour)}, now)
	if err != nil {
		t.Fatal(err)
	}
	// Two more scheduled runs, the outbox published, then the kill.
	runs := scheduledRuns(t, leader)
	testkit.Eventually(t, 10*time.Second, "two more scheduled runs", func() bool { return scheduledRuns(t, leader) >= runs+2 })
	testkit.Eventually(t, 10*time.Second, "the leader's outbox is published", func() bool {
		n, err := leader.Store().PendingCount(ctx)
		return err == nil && n == 0
	})
	wantFindings, _ := leader.Store().List(ctx, findings.ListFilter{})
	// The leader's last change never reaches the stream: its connection
	// is gone when it commits it.
	var stale findings.Finding
	for _, w := range wantFindings {
		if w.AcknowledgedAt == nil && w.ID != fs[0].ID {
			stale = w
		}
	}
	leader.CloseNATS()
	if _, err := leader.Store().Act(ctx, stale.ID, findings.ActionRequest{Action: findings.ActionDismiss, Reason: findings.DismissNotAnIssue, Actor: "op"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	leader.Crash()
	nodes[li] = nil

	testkit.Eventually(t, 2*ttl+time.Second, "a new writer within two lease TTLs", func() bool { _, ok := writer(); return ok })
	ni, _ := writer()
	next := nodes[ni]
	tookOver := time.Since(killedAt)
	testkit.Eventually(t, 2*ttl, "the new leader runs", func() bool { return len(ownRuns(t, next, next)) == 0 && newRunsSince(t, next, killedAt) >= 1 })
	if tookOver > 2*ttl {
		t.Fatalf("took over after %s, want within %s", tookOver, 2*ttl)
	}

	got, err := next.Store().List(ctx, findings.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]findings.Finding{}
	for _, f := range got {
		byID[f.ID] = f
	}
	for _, w := range wantFindings {
		g, ok := byID[w.ID]
		if !ok {
			t.Fatalf("finding %s lost on the new leader", w.ID)
		}
		if g.DetectedAt != w.DetectedAt || g.AcknowledgedAt == nil != (w.AcknowledgedAt == nil) || g.TimesRaised < w.TimesRaised {
			t.Fatalf("finding %s on the new leader:\n got %+v\nwant %+v", w.ID, g, w)
		}
	}
	if byID[fs[0].ID].AcknowledgedAt == nil {
		t.Fatalf("ack lost: %+v", byID[fs[0].ID])
	}
	gotSil, err := next.Store().Silences(ctx, time.Now(), true)
	if err != nil || len(gotSil) != 1 || !reflect.DeepEqual(gotSil[0].Matchers, sil.Matchers) || gotSil[0].ID != sil.ID {
		t.Fatalf("silences on the new leader: %+v %v, want [%+v]", gotSil, err, sil)
	}

	// The killed leader restarts as a standby: the new leader wrote since,
	// so its unpublished change is dropped, not replayed over newer rows.
	reg := prometheus.NewRegistry()
	logs[li] = &testkit.LogBuffer{}
	back, err := daemon.New(daemon.Options{Config: cfgs[li], Registerer: reg, Gatherer: reg, Stderr: logs[li]})
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { back.Stop(context.Background()) })
	if !strings.Contains(logs[li].String(), "unsent state changes dropped") {
		t.Fatalf("restarted leader kept its stale changes:\n%s", logs[li].String())
	}
	if f, err := next.Store().Get(ctx, stale.ID); err != nil || f.DismissedAt != nil {
		t.Fatalf("the killed leader's unpublished dismissal reached the new leader: %+v %v", f, err)
	}
	if back.IsWriter() {
		t.Fatal("the restarted instance writes beside the new leader")
	}
	// Its own database held the dismissal too: it re-seeds itself from a
	// caught-up instance, and then holds what the others hold.
	testkit.Eventually(t, 20*time.Second, "the restarted instance re-seeded itself", func() bool {
		f, err := back.Store().Get(ctx, stale.ID)
		return err == nil && f.DismissedAt == nil && strings.Contains(logs[li].String(), "diverged database re-seeded")
	})
	if err := back.Ready(ctx); err != nil {
		t.Fatalf("the re-seeded instance is unready: %v", err)
	}

	// A mutation on the remaining standby is forwarded to the new leader;
	// reads on the standby carry the replica's position.
	si := 3 - li - ni
	standby := nodes[si]
	target := wantFindings[len(wantFindings)-1]
	for _, w := range wantFindings {
		if w.AcknowledgedAt == nil && w.ID != fs[0].ID {
			target = w
		}
	}
	req, _ := http.NewRequest("POST", "http://"+standby.HTTPAddr()+"/api/v1/findings/"+target.ID+"/ack", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer admin-secret-0001")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get(cluster.HeaderForwardedBy) != fmt.Sprintf("node-%d", ni+1) {
		t.Fatalf("ack on the standby: %d, forwarded by %q; want 200 from node-%d", res.StatusCode, res.Header.Get(cluster.HeaderForwardedBy), ni+1)
	}
	if f, err := next.Store().Get(ctx, target.ID); err != nil || f.AcknowledgedAt == nil {
		t.Fatalf("forwarded ack not on the leader: %+v %v", f, err)
	}
	testkit.Eventually(t, 5*time.Second, "the forwarded ack reaches the standby's database", func() bool {
		f, err := standby.Store().Get(ctx, target.ID)
		return err == nil && f.AcknowledgedAt != nil
	})
	req, _ = http.NewRequest("GET", "http://"+standby.HTTPAddr()+"/api/v1/findings", nil)
	req.Header.Set("Authorization", "Bearer admin-secret-0001")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get(cluster.HeaderReplicaRole) != "standby" || res.Header.Get(cluster.HeaderReplicaSeq) == "" ||
		res.Header.Get(cluster.HeaderReplicaLast) == "" {
		t.Fatalf("read on the standby: %d %v", res.StatusCode, res.Header)
	}

	// /api/v1/status shows each one's replica position.
	testkit.Eventually(t, 5*time.Second, "status: the standby caught up, the leader writes", func() bool {
		_, sb := call(t, "GET", "http://"+standby.HTTPAddr()+"/api/v1/status", "admin-secret-0001", "")
		_, ld := call(t, "GET", "http://"+next.HTTPAddr()+"/api/v1/status", "admin-secret-0001", "")
		sr, _ := sb["replica"].(map[string]any)
		lr, _ := ld["replica"].(map[string]any)
		return sr != nil && lr != nil && sr["writer"] == false && sr["behind"] == false && sr["applied_seq"] == sr["last_seq"] &&
			lr["writer"] == true && sb["role"] == "standby" && ld["role"] == "leader"
	})

	// Let the new leader's remediation settle, then read the whole stream.
	var c natstest.Counts
	defer func() {
		if t.Failed() {
			t.Logf("stream: %+v", c)
			for i, l := range logs {
				t.Logf("node-%d log:\n%s", i+1, l.String())
			}
		}
	}()
	testkit.Eventually(t, 20*time.Second, "every remediation request has its outcome", func() bool {
		c = natstest.ReadStream(t, urls[ni])
		return len(c.Requests) > 0 && len(c.Unanswered()) == 0
	})
	for id, n := range c.Opened {
		if n != 1 {
			t.Errorf("finding %s has %d opened events, want 1", id, n)
		}
	}
	for k, n := range c.Requests {
		if n != 1 || c.Outcomes[k] != 1 {
			t.Errorf("remediation %s: %d requests, %d outcomes; want 1 and 1", k, n, c.Outcomes[k])
		}
	}
	for i, l := range logs {
		if s := l.String(); strings.Contains(s, "unknown finding") {
			t.Errorf("node-%d dropped an unknown finding:\n%s", i+1, s)
		}
	}
	_ = os.Stderr
}

// newRunsSince counts d's runs started after at.
func newRunsSince(t *testing.T, d *daemon.Daemon, at time.Time) int {
	t.Helper()
	list, err := d.Store().Runs(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range list {
		if r.StartedAt.After(at) {
			n++
		}
	}
	return n
}

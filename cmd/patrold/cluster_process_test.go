package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/bus/embedded/natstest"
	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/patrol"
)

// clusterTTL is the leader lease TTL of TestClusterProcessFailover: a new
// leader must have finished a scheduled run within two of them after the
// kill.
const clusterTTL = 3 * time.Second

// clusterYAML is the part of the configuration every instance and worker
// shares:
//   - the example fleet with faults (a file, so every run sees the same
//     fleet);
//   - full autonomy (every finding gets one remediation request,
//     max_attempts 1);
//   - a harmless action for high_cpu;
//   - a gated one for high_disk: it marks gate/started.<pid> and waits
//     until gate/open exists (at most 60 s), so those sessions are in
//     flight when the leader dies.
//
// Neither action fixes anything: each request ends with one outcome.
func clusterYAML(t *testing.T, gate string) string {
	t.Helper()
	snap, err := filepath.Abs(filepath.Join("..", "..", "examples", "small-faults.json"))
	if err != nil {
		t.Fatal(err)
	}
	wait := `touch "$0/started.$$"; i=0; while [ ! -f "$0/open" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done`
	return "schedule: {cron: '@every 1s', startup_delay: 1h}\n" +
		"source: {kind: file, file: {path: " + snap + "}}\n" +
		"patrol: {autonomy: full}\n" +
		"investigation: {max_concurrent: 10, max_attempts: 1}\n" +
		"actions: [{name: noop, command: [/bin/true], risk: low, kinds: [node], signals: [high_cpu]},\n" +
		"  {name: gated, command: [sh, -c, '" + wait + "', " + gate + "], risk: low, kinds: [storage], signals: [high_disk]}]\n"
}

// gateStarted counts the gated actions that started.
func gateStarted(t *testing.T, gate string) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(gate, "started.*"))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

// openGate lets the gated actions finish.
func openGate(t *testing.T, gate string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(gate, "open"), nil, 0o600); err != nil && !errors.Is(err, os.ErrExist) {
		t.Error(err)
	}
}

// instance is one `patrold serve` of the cluster, or a `patrold worker`
// (no API: c and fwd stay nil).
type instance struct {
	name, cfg, data string
	p               *proc
	c               *api.Client
	fwd             *headerTap // the Patrold-Forwarded-By of c's last answer
	api             string     // the API's address
}

// headerTap records one header of the last answer an api.Client read.
type headerTap struct {
	name string
	mu   sync.Mutex
	last string
}

func (h *headerTap) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		h.mu.Lock()
		h.last = res.Header.Get(h.name)
		h.mu.Unlock()
	}
	return res, err
}

func (h *headerTap) get() string { h.mu.Lock(); defer h.mu.Unlock(); return h.last }

// start starts (or restarts) the instance's serve process on its data_dir.
func (in *instance) start(t *testing.T) {
	t.Helper()
	in.p = startPatrold(t, in.cfg, "serve")
}

// connect waits for the process's API and makes the client for it.
func (in *instance) connect(t *testing.T) {
	t.Helper()
	_, h := apiOf(t, in.p, in.data)
	in.api = h.API
	in.fwd = &headerTap{name: cluster.HeaderForwardedBy}
	var err error
	in.c, err = api.NewClient("http://"+h.API, testAdminToken, &http.Client{Timeout: 10 * time.Second, Transport: in.fwd})
	if err != nil {
		t.Fatal(err)
	}
}

// status is the instance's /api/v1/status, or nil when it does not answer.
func (in *instance) status() *api.Status {
	raw, err := in.c.Status(context.Background())
	if err != nil {
		return nil
	}
	var s api.Status
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	return &s
}

// ready reports whether the instance's /readyz answers 200.
func (in *instance) ready() bool {
	c := &http.Client{Timeout: 5 * time.Second}
	res, err := c.Get("http://" + in.api + "/readyz")
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}

// writer reports whether the instance leads and has caught up.
func (in *instance) writer() bool {
	s := in.status()
	return s != nil && s.Role == string(cluster.RoleLeader) && s.Replica != nil && s.Replica.Writer
}

// clusterNodes makes (without starting them) the instances node-1..n of
// a cluster on the JetStream servers urls, one per server: each dials
// its own server first. They share the deployment key file key, an R3
// stream, the lease TTL ttl and the YAML shared.
func clusterNodes(t *testing.T, urls []string, key, shared string, ttl time.Duration) []*instance {
	t.Helper()
	nodes := make([]*instance, len(urls))
	for i := range nodes {
		order := append([]string{urls[i]}, slices.Delete(slices.Clone(urls), i, i+1)...)
		in := &instance{name: fmt.Sprintf("node-%d", i+1)}
		in.cfg, in.data = serveConfig(t, shared+
			"cluster: {secret_file: "+key+", instance: "+in.name+"}\n"+
			"nats: {url: '"+strings.Join(order, ",")+"', stream: {replicas: 3}, lease: {ttl: "+ttl.String()+"}}\n")
		nodes[i] = in
	}
	return nodes
}

// writerOf waits up to within for one of nodes (connected) to write and
// returns it and the others.
func writerOf(t *testing.T, nodes []*instance, within time.Duration) (*instance, []*instance) {
	t.Helper()
	var w *instance
	testkit.Eventually(t, within, "one instance writes", func() bool {
		for _, in := range nodes {
			if in.writer() {
				w = in
				return true
			}
		}
		return false
	})
	var others []*instance
	for _, in := range nodes {
		if in != w {
			others = append(others, in)
		}
	}
	return w, others
}

// TestClusterProcessFailover: three `patrold serve` processes in cluster
// mode (no assistant) and two `patrold worker` processes on a three-node
// JetStream cluster (R3 stream, embedded in the test process). Operators
// ack and silence through the leader and through a standby. The leader is
// killed with SIGKILL while it schedules and while two sessions run in
// the workers. Then:
//   - a survivor finishes a scheduled run within two lease TTLs with every
//     finding, ack and silence as they were, and takes the outcomes of the
//     two sessions;
//   - the stream holds one opened per finding and one outcome per
//     remediation request;
//   - every session ran in a worker;
//   - no process drops an unknown finding;
//   - the killed instance restarts as a standby and catches up.
func TestClusterProcessFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	ctx := context.Background()
	urls := natstest.Cluster(t, 3)
	gate := t.TempDir()
	key := testkit.KeyFile(t)
	shared := clusterYAML(t, gate)
	nodes := clusterNodes(t, urls, key, shared, clusterTTL)
	// Two standalone workers (no database, no data_dir) take the
	// remediation requests: the instances run no assistant.
	workers := make([]*instance, 2)
	for i := range workers {
		order := append([]string{urls[i+1]}, slices.Delete(slices.Clone(urls), i+1, i+2)...)
		w := &instance{name: fmt.Sprintf("worker-%d", i+1)}
		w.cfg, w.data = serveConfig(t, shared+
			"assistant: {enabled: true}\n"+
			"cluster: {secret_file: "+key+", instance: "+w.name+"}\n"+
			"nats: {url: '"+strings.Join(order, ",")+"', stream: {replicas: 3}}\n")
		workers[i] = w
	}
	// The five processes start side by side; each instance then announces
	// its API, each worker logs that it is ready.
	for _, w := range workers {
		w.p = startPatrold(t, w.cfg, "worker")
	}
	t.Cleanup(func() { openGate(t, gate) }) // before the workers are killed
	for _, in := range nodes {
		in.start(t)
	}
	for _, w := range workers {
		testkit.Eventually(t, 30*time.Second, w.name+" is ready", func() bool { return strings.Contains(w.p.stderr.String(), `msg="worker ready"`) })
	}
	for _, in := range nodes {
		in.connect(t)
	}

	leader, standbys := writerOf(t, nodes, 20*time.Second)
	// The leader files the fleet's findings; the workers answer every
	// request but the high_disk ones, whose actions wait at the gate.
	var fs []api.FindingView
	gated := map[string]bool{}
	testkit.Eventually(t, 20*time.Second, "the leader files the findings, the workers answer all but the gated requests", func() bool {
		var err error
		fs, err = leader.c.Findings(ctx, findings.ListFilter{})
		if err != nil || len(fs) < 3 || gateStarted(t, gate) < 2 {
			return false
		}
		gated = map[string]bool{}
		for _, f := range fs {
			if f.Key == "high_disk" {
				gated[fmt.Sprintf("%s/%d", f.ID, f.Attempt)] = true
			}
		}
		c := natstest.ReadStream(t, urls[0])
		un := c.Unanswered()
		return len(c.Requests) == len(fs) && len(un) == len(gated) && len(gated) == 2 && !slices.ContainsFunc(un, func(k string) bool { return !gated[k] })
	})
	if n := gateStarted(t, gate); n != 2 {
		t.Fatalf("%d gated actions started, want 2 (one per high_disk finding)", n)
	}

	// Operator actions: an ack on the leader, an ack and a silence through
	// a standby (forwarded to the leader).
	if _, err := leader.c.Act(ctx, fs[0].ID, findings.ActionRequest{Action: findings.ActionAcknowledge}); err != nil {
		t.Fatal(err)
	}
	if _, err := standbys[0].c.Act(ctx, fs[1].ID, findings.ActionRequest{Action: findings.ActionAcknowledge}); err != nil {
		t.Fatal(err)
	}
	if by := standbys[0].fwd.get(); by != leader.name {
		t.Fatalf("ack on standby %s: forwarded by %q, want %s", standbys[0].name, by, leader.name)
	}
	sil, err := standbys[1].c.AddSilence(ctx, api.SilenceRequest{Matchers: findings.Matchers{Resource: fs[2].ResourceID},
		Comment: "maintenance", Author: "op", Duration: "1h"})
	if err != nil {
		t.Fatal(err)
	}
	if by := standbys[1].fwd.get(); by != leader.name {
		t.Fatalf("silence on standby %s: forwarded by %q, want %s", standbys[1].name, by, leader.name)
	}

	// Everything published and on both standbys: what the leader holds now
	// is what any new leader must hold.
	var want []api.FindingView
	var wantSil []findings.Silence
	testkit.Eventually(t, 20*time.Second, "a scheduled run after the actions, published and applied by both standbys", func() bool {
		s := leader.status()
		if s == nil || s.OutboxPending != 0 || s.LastRunAt == nil || !s.LastRunAt.After(sil.CreatedAt) {
			return false
		}
		for _, sb := range standbys {
			st := sb.status()
			if st == nil || st.Replica == nil || st.Replica.Behind || st.Replica.AppliedSeq != s.Replica.LastSeq {
				return false
			}
		}
		var err error
		if want, err = leader.c.Findings(ctx, findings.ListFilter{}); err != nil {
			return false
		}
		wantSil, err = leader.c.Silences(ctx, false)
		return err == nil
	})

	// SIGKILL while it schedules: right after its next scheduled run.
	runs := len(runsBy(t, leader.c, string(patrol.TriggerScheduled)))
	testkit.Eventually(t, 10*time.Second, "the leader's next scheduled run", func() bool {
		return len(runsBy(t, leader.c, string(patrol.TriggerScheduled))) > runs
	})
	killedAt := time.Now()
	leader.p.signal(syscall.SIGKILL)
	if code := leader.p.exit(10 * time.Second); code != -int(syscall.SIGKILL) {
		t.Fatalf("killed leader exited %d", code)
	}
	// The sessions in flight since before the kill end now, while there is
	// no writer: their workers keep the results and store them through the
	// new writer once it answers (assistant StoreRetry).
	openGate(t, gate)

	// A survivor leads and finishes a scheduled run within two TTLs.
	var next *instance
	var first findings.RunRecord
	testkit.Eventually(t, 2*clusterTTL+10*time.Second, "a survivor finishes a scheduled run", func() bool {
		for _, in := range standbys {
			if !in.writer() {
				continue
			}
			for _, r := range runsBy(t, in.c, string(patrol.TriggerScheduled)) {
				if r.StartedAt.After(killedAt) && r.FinishedAt != nil && (first.FinishedAt == nil || r.FinishedAt.Before(*first.FinishedAt)) {
					next, first = in, r
				}
			}
		}
		return next != nil
	})
	took := first.FinishedAt.Sub(killedAt)
	if took > 2*clusterTTL {
		t.Fatalf("first run of new leader %s finished %s after the kill, want within %s", next.name, took, 2*clusterTTL)
	}
	t.Logf("%s killed; %s finished a scheduled run %s later", leader.name, next.name, took.Round(time.Millisecond))

	// Findings, acks and silences as they were (a run since moves only
	// when a finding was last seen, and by which run).
	got, err := next.c.Findings(ctx, findings.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	inFlight := map[string]bool{}
	for k := range gated {
		inFlight[strings.Split(k, "/")[0]] = true
	}
	if diff := findingsDiff(got, want, inFlight); diff != "" {
		t.Fatalf("findings on the new leader %s differ from the killed leader's:\n%s", next.name, diff)
	}
	gotSil, err := next.c.Silences(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotSil, wantSil) {
		t.Fatalf("silences on the new leader:\n got %+v\nwant %+v", gotSil, wantSil)
	}

	// The killed instance comes back on its data_dir as a standby and
	// catches up with the new leader.
	leader.start(t)
	leader.connect(t)
	testkit.Eventually(t, 20*time.Second, "the restarted instance is a caught-up standby with the new leader's findings", func() bool {
		s, ns := leader.status(), next.status()
		if s == nil || ns == nil || s.Role != string(cluster.RoleStandby) || s.Replica == nil || s.Replica.Writer ||
			s.Replica.Behind || ns.Replica == nil || s.Replica.AppliedSeq != ns.Replica.LastSeq {
			return false
		}
		a, errA := leader.c.Findings(ctx, findings.ListFilter{})
		b, errB := next.c.Findings(ctx, findings.ListFilter{})
		return errA == nil && errB == nil && reflect.DeepEqual(a, b)
	})
	if !next.writer() {
		t.Fatalf("%s stopped writing when %s came back", next.name, leader.name)
	}

	// The whole stream: one opened per finding, one outcome per request.
	var c natstest.Counts
	testkit.Eventually(t, 20*time.Second, "every remediation request has its outcome", func() bool {
		c = natstest.ReadStream(t, urls[1])
		return len(c.Unanswered()) == 0
	})
	// The new leader took the outcomes of the sessions cut by the kill.
	testkit.Eventually(t, 10*time.Second, "the new leader applied the outcomes of the sessions in flight at the kill", func() bool {
		for id := range inFlight {
			f, err := next.c.Finding(ctx, id)
			if err != nil || f.Finding.LastOutcome == "" || f.Finding.InvestigationStatus != "" {
				return false
			}
		}
		return true
	})
	wantOpened := map[string]int{}
	for _, f := range want {
		wantOpened[f.ID] = 1
	}
	if !maps.Equal(c.Opened, wantOpened) {
		t.Errorf("opened events per finding: %v, want %v", c.Opened, wantOpened)
	}
	wantReq := map[string]int{}
	for _, f := range want {
		wantReq[fmt.Sprintf("%s/%d", f.ID, f.Attempt)] = 1
	}
	if !maps.Equal(c.Requests, wantReq) || !maps.Equal(c.Outcomes, wantReq) {
		t.Errorf("remediation requests %v and outcomes %v, want one each for %v", c.Requests, c.Outcomes, wantReq)
	}
	// The workers ran every session, the instances none; no process
	// dropped an unknown finding.
	sessions := map[string]int{}
	for _, p := range append(slices.Clone(nodes), workers...) {
		out := p.p.stderr.String()
		if strings.Contains(out, "unknown finding") {
			t.Errorf("%s dropped an unknown finding:\n%s", p.name, out)
		}
		ended := sessionsEnded(out)
		if strings.HasPrefix(p.name, "node-") && len(ended) > 0 {
			t.Errorf("%s ran remediation sessions with assistant.enabled false: %v", p.name, ended)
		}
		for _, f := range ended {
			sessions[f]++
		}
	}
	wantSessions := map[string]int{}
	for _, f := range want {
		wantSessions[f.ID] = 1
	}
	if !maps.Equal(sessions, wantSessions) {
		t.Errorf("remediation sessions ended per finding in the workers: %v, want %v", sessions, wantSessions)
	}
	for _, w := range workers {
		if _, err := os.Stat(w.data); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s made its data_dir %s: %v", w.name, w.data, err)
		}
	}
}

// sessionsEnded lists the findings of the "remediation session ended"
// lines of a process's (text) log.
func sessionsEnded(log string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `msg="remediation session ended"`) {
			continue
		}
		for _, kv := range strings.Fields(line) {
			if f, ok := strings.CutPrefix(kv, "finding="); ok {
				out = append(out, f)
			}
		}
	}
	return out
}

// findingsDiff compares the findings a new leader lists with what the old
// one listed. They are the same findings with the same values, but for
// what every run moves forward (when each was last seen, how often, by
// which run). For the findings whose remediation was in flight, the
// session's progress also moves (the same attempt, though). It names each
// differing field.
func findingsDiff(got, want []api.FindingView, inFlight map[string]bool) string {
	byID := map[string]api.FindingView{}
	for _, g := range got {
		byID[g.ID] = g
	}
	var b strings.Builder
	if len(got) != len(want) {
		fmt.Fprintf(&b, "%d findings, want %d\n", len(got), len(want))
	}
	for _, w := range want {
		g, ok := byID[w.ID]
		if !ok {
			fmt.Fprintf(&b, "%s lost\n", w.ID)
			continue
		}
		if g.LastSeenAt.Before(w.LastSeenAt) || g.TimesRaised < w.TimesRaised {
			fmt.Fprintf(&b, "%s went back: last seen %s (was %s), raised %d times (was %d)\n", w.ID, g.LastSeenAt, w.LastSeenAt, g.TimesRaised, w.TimesRaised)
		}
		g.LastSeenAt, g.TimesRaised, g.LastRunID = w.LastSeenAt, w.TimesRaised, w.LastRunID
		if inFlight[w.ID] && g.Attempt == w.Attempt && g.Attempts == w.Attempts {
			g.Investigation, g.State = w.Investigation, w.State
		}
		if reflect.DeepEqual(g, w) {
			continue
		}
		var gm, wm map[string]any
		gj, _ := json.Marshal(g)
		wj, _ := json.Marshal(w)
		_ = json.Unmarshal(gj, &gm)
		_ = json.Unmarshal(wj, &wm)
		for _, k := range slices.Sorted(maps.Keys(mergeKeys(gm, wm))) {
			if !reflect.DeepEqual(gm[k], wm[k]) {
				fmt.Fprintf(&b, "%s %s: got %v, want %v\n", w.ID, k, gm[k], wm[k])
			}
		}
	}
	return b.String()
}

func mergeKeys(a, b map[string]any) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/bus/embedded/natstest"
	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
)

// The partition test's lease TTL, how long each cut lasts and how many
// cuts a run makes. A cut outlasts the lease and JetStream's longest
// Raft election (9 s in nats-server), so the majority side elects new
// stream and lease leaders and one of its instances takes over (when
// one is there).
const (
	partitionTTL  = 2 * time.Second
	partitionCut  = 10 * time.Second
	partitionCuts = 2
)

// partitionPlacements put the three instances on the three NATS servers
// (instance i dials server p[i] only). Every cut isolates the writer's
// server, so over a run's cuts they cover: each instance alone on its
// server; the writer with a standby, the other alone; the writer alone,
// both standbys on one server; all three cut off together (no writer
// can exist until healing).
var partitionPlacements = [][3]int{{0, 1, 2}, {0, 0, 1}, {0, 0, 0}}

// partitionRuns counts the runs of TestClusterPartitionHeals in this
// process: `go test -count=N` runs each placement in turn.
var partitionRuns atomic.Int64

// chaosEnv runs the partition test; `make chaos` sets it.
const chaosEnv = "CHAOS"

// TestClusterPartitionHeals: three `patrold serve` on a three-node
// JetStream cluster (R3) whose routes pass through proxies. Operators
// silence, acknowledge, snooze, dismiss and suppress through random
// instances while, partitionCuts times, the writer's NATS server is cut
// off from the other two for longer than the lease, then healed. Then:
//   - after each heal every instance is ready, with a writer and no gap
//     nor divergence, within the bound docs/CLUSTER.md states;
//   - no answer is a 5xx other than a 503 with a code, and none takes
//     longer than the forwarded answer's bound (and a margin);
//   - every action answered 2xx is on every instance, and none answered
//     a definite 503 (not a held or forwarded one) was applied;
//   - every instance's database holds the same replicated rows, table
//     by table.
func TestClusterPartitionHeals(t *testing.T) {
	if os.Getenv(chaosEnv) == "" {
		t.Skip("partition test: run by `make chaos` (" + chaosEnv + "=1)")
	}
	run := partitionRuns.Add(1) - 1
	place := partitionPlacements[int(run)%len(partitionPlacements)]
	start := time.Now()
	nw := natstest.PartitionCluster(t, 3)
	snap, err := filepath.Abs(filepath.Join("..", "..", "examples", "small-faults.json"))
	if err != nil {
		t.Fatal(err)
	}
	key := testkit.KeyFile(t)
	nodes := make([]*instance, 3)
	for i := range nodes {
		in := &instance{name: fmt.Sprintf("node-%d", i+1)}
		in.cfg, in.data = serveConfig(t, "schedule: {cron: '@every 3s', startup_delay: 1s}\n"+
			"source: {kind: file, file: {path: "+snap+"}}\n"+
			"cluster: {secret_file: "+key+", instance: "+in.name+"}\n"+
			"nats: {url: '"+nw.URLs[place[i]]+"', stream: {replicas: 3}, lease: {ttl: "+partitionTTL.String()+"}}\n")
		nodes[i] = in
	}
	for _, in := range nodes {
		in.start(t)
	}
	for _, in := range nodes {
		in.connect(t)
	}
	writer, _ := writerOf(t, nodes, 30*time.Second)
	var fs []api.FindingView
	testkit.Eventually(t, 20*time.Second, "the writer files the fleet's findings", func() bool {
		fs, err = writer.c.Findings(context.Background(), findings.ListFilter{})
		return err == nil && len(fs) >= 3
	})

	load := newChaosLoad(t, nodes)
	ctx, stop := context.WithCancel(context.Background())
	load.start(ctx, fs)
	bound := cluster.ReadyAfterHealBound(partitionTTL)
	for cut := range partitionCuts {
		w := writerNow(t, nodes)
		node := place[slices.Index(nodes, w)]
		var with []string
		for i, in := range nodes {
			if in != w && place[i] == node {
				with = append(with, in.name)
			}
		}
		// The partition itself, longer than the lease: an instance on the
		// majority side takes over. With none there, outlasting the lease
		// is enough.
		cutFor := partitionCut
		if len(with) == len(nodes)-1 {
			cutFor = 3 * partitionTTL
		}
		nw.Cut(node)
		cutAt := time.Now()
		took := "none"
		for time.Since(cutAt) < cutFor {
			for i, in := range nodes {
				if place[i] != node && took == "none" && in.writer() {
					took = in.name + " writes " + time.Since(cutAt).Round(time.Millisecond).String() + " after the cut"
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		nw.Heal(node)
		healed := time.Now()
		testkit.EventuallyState(t, bound, "every instance ready after healing, one writer, no gap", func() (bool, string) {
			writers := 0
			for _, in := range nodes {
				s := in.status()
				if s == nil || !s.Ready || s.Replica == nil || s.Replica.Gap != "" || s.Replica.Diverged != "" {
					return false, in.name + ": " + statusLine(s)
				}
				if s.Replica.Writer {
					writers++
				}
			}
			return writers == 1, fmt.Sprintf("%d writers", writers)
		})
		t.Logf("placement %v, cut %d: %s (writer, nats-%d, with %v) cut off %s at %s, %s; all ready %s after healing (bound %s)",
			place, cut+1, w.name, node+1, with, cutFor, cutAt.UTC().Format("15:04:05.000"), took, time.Since(healed).Round(time.Millisecond), bound)
	}
	stop()
	load.wait()
	final := writerNow(t, nodes)
	for _, in := range nodes {
		testkit.Eventually(t, 20*time.Second, in.name+" applied what the writer published", func() bool { return caughtUp(in, final) })
	}
	load.check(t, nodes)
	sameReplicas(t, nodes)
	t.Logf("placement %v: %s; run took %s", place, load.summary(), time.Since(start).Round(time.Millisecond))
}

// writerNow is the instance that writes now (waiting for one).
func writerNow(t *testing.T, nodes []*instance) *instance {
	t.Helper()
	w, _ := writerOf(t, nodes, cluster.ReadyAfterHealBound(partitionTTL))
	return w
}

// outcome is what an answer tells of an action: applied (2xx), not
// applied (4xx, a 503 before anything was done), or unknown (no answer,
// a held 503 not_durable, a forwarded 503 a writer took).
type outcome int

const (
	applied outcome = iota
	refused
	unknown
)

// chaosLoad is the operators' side of the partition test: what they
// asked, and what each answer said.
type chaosLoad struct {
	t      *testing.T
	nodes  []*instance
	client map[string]*api.Client // per instance, with the answer bound
	wg     sync.WaitGroup

	mu         sync.Mutex
	silences   map[string]findings.Silence // answered 2xx, by id
	noSilence  map[string]bool             // resources of silences answered with a definite refusal
	acts       map[string]*findingActs     // by finding
	by         map[outcome]int
	slowest    time.Duration
	bad5xx     []string
	codes503   map[string]int
	forwarded  int
	answerWait time.Duration
}

// findingActs is one finding's operator: its actions, one at a time.
type findingActs struct {
	answered map[string]int // event kind -> actions answered 2xx
	unknown  map[string]int // event kind -> actions with no definite answer
	last     *api.FindingView
	lastOK   bool // the last action was answered 2xx
}

func newChaosLoad(t *testing.T, nodes []*instance) *chaosLoad {
	l := &chaosLoad{t: t, nodes: nodes, client: map[string]*api.Client{}, silences: map[string]findings.Silence{},
		noSilence: map[string]bool{}, acts: map[string]*findingActs{}, by: map[outcome]int{}, codes503: map[string]int{}}
	// A forwarded answer is bounded by the stream ack timeout and a
	// margin; the client waits a little longer to see the 503.
	l.answerWait = cluster.ForwardBound(api.DefaultStreamAckTimeout)
	for _, in := range nodes {
		c, err := api.NewClient("http://"+in.api, testAdminToken, &http.Client{Timeout: l.answerWait + 3*time.Second})
		if err != nil {
			t.Fatal(err)
		}
		l.client[in.name] = c
	}
	return l
}

// classify records one answer and says what it means.
func (l *chaosLoad) classify(took time.Duration, err error) outcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.slowest = max(l.slowest, took)
	o := applied
	var ae *api.Error
	switch {
	case err == nil:
	case errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500:
		o = refused
	case errors.As(err, &ae) && ae.Status == http.StatusServiceUnavailable && ae.Code != "":
		l.codes503[string(ae.Code)]++
		o = refused
		if ae.Code == api.CodeNotDurable || ae.Details["forwarded"] == true {
			o = unknown
			l.forwarded++
		}
	case errors.As(err, &ae):
		l.bad5xx = append(l.bad5xx, fmt.Sprintf("%d %s: %s", ae.Status, ae.Code, ae.Message))
		o = unknown
	default:
		o = unknown // no answer
	}
	l.by[o]++
	return o
}

func (l *chaosLoad) start(ctx context.Context, fs []api.FindingView) {
	for _, in := range l.nodes {
		for g := range 2 {
			l.wg.Add(1)
			go l.silencer(ctx, fmt.Sprintf("%s-%d", in.name, g))
		}
	}
	for _, f := range fs {
		fa := &findingActs{answered: map[string]int{}, unknown: map[string]int{}}
		l.acts[f.ID] = fa
		l.wg.Add(1)
		go l.operator(ctx, f.ID, fa)
	}
}

func (l *chaosLoad) wait() { l.wg.Wait() }

// pick is a random instance's client.
func (l *chaosLoad) pick() *api.Client {
	return l.client[l.nodes[rand.IntN(len(l.nodes))].name]
}

// silencer adds silences through random instances until ctx ends.
func (l *chaosLoad) silencer(ctx context.Context, tag string) {
	defer l.wg.Done()
	for i := 0; ctx.Err() == nil; i++ {
		res := fmt.Sprintf("vm/%s-%d", tag, i)
		t0 := time.Now()
		s, err := l.pick().AddSilence(context.Background(), api.SilenceRequest{Matchers: findings.Matchers{Resource: res},
			Comment: "partition", Author: "op", Duration: "1h"})
		switch l.classify(time.Since(t0), err) {
		case applied:
			l.mu.Lock()
			l.silences[s.ID] = s
			l.mu.Unlock()
		case refused:
			l.mu.Lock()
			l.noSilence[res] = true
			l.mu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// operatorCycle is what one finding's operator does, in turn; the
// acknowledgement only once (a second one records nothing).
var operatorCycle = []struct {
	req  findings.ActionRequest
	kind string // the lifecycle event it records
}{
	{findings.ActionRequest{Action: findings.ActionSnooze, For: findings.MinSnooze}, "snoozed"},
	{findings.ActionRequest{Action: findings.ActionDismiss, Reason: findings.DismissWillFixLater}, "dismissed"},
	{findings.ActionRequest{Action: findings.ActionUndismiss}, "undismissed"},
	{findings.ActionRequest{Action: findings.ActionSuppress}, "suppressed"},
	{findings.ActionRequest{Action: findings.ActionUnsuppress}, "unsuppressed"},
}

// operator acts on one finding through random instances, about once a
// second (the finding keeps its newest findings.MaxEventsPerFinding
// events), until ctx ends and its last action was answered 2xx.
func (l *chaosLoad) operator(ctx context.Context, id string, fa *findingActs) {
	defer l.wg.Done()
	act := func(req findings.ActionRequest, kind string) {
		t0 := time.Now()
		v, err := l.pick().Act(context.Background(), id, req)
		o := l.classify(time.Since(t0), err)
		l.mu.Lock()
		defer l.mu.Unlock()
		fa.lastOK = o == applied
		switch o {
		case applied:
			fa.answered[kind]++
			fa.last = v
		case unknown:
			fa.unknown[kind]++
		}
	}
	act(findings.ActionRequest{Action: findings.ActionAcknowledge}, "acknowledged")
	for i := 0; ; i++ {
		l.mu.Lock()
		done := ctx.Err() != nil && fa.lastOK
		l.mu.Unlock()
		if done || i > 200 {
			return
		}
		c := operatorCycle[i%len(operatorCycle)]
		act(c.req, c.kind)
		time.Sleep(time.Second)
	}
}

// check holds every instance to the answers.
func (l *chaosLoad) check(t *testing.T, nodes []*instance) {
	t.Helper()
	ctx := context.Background()
	if len(l.bad5xx) > 0 {
		t.Errorf("%d answers were a 5xx other than a 503 with a code: %q", len(l.bad5xx), l.bad5xx)
	}
	if l.slowest > l.answerWait+2*time.Second {
		t.Errorf("the slowest answer took %s, over the forwarded answer's bound %s and 2 s", l.slowest, l.answerWait)
	}
	for _, in := range nodes {
		got := allSilences(t, in.c)
		var missing []findings.Silence
		for id, want := range l.silences {
			if g, ok := got[id]; !ok {
				missing = append(missing, want)
			} else if !reflect.DeepEqual(g, want) {
				t.Errorf("silence %s on %s is\n%+v\nthe answer said\n%+v", id, in.name, g, want)
			}
		}
		if len(missing) > 0 {
			t.Errorf("%d of %d silences answered 2xx are missing on %s: %s (status: %s)", len(missing), len(l.silences), in.name,
				missingSpan(missing), statusLine(in.status()))
		}
		for _, s := range got {
			if l.noSilence[s.Matchers.Resource] {
				t.Errorf("silence for %s on %s was answered with a refusal, yet applied", s.Matchers.Resource, in.name)
			}
		}
		for id, fa := range l.acts {
			d, err := in.c.Finding(ctx, id)
			if err != nil {
				t.Fatalf("finding %s on %s: %v", id, in.name, err)
			}
			events := map[string]int{}
			for _, e := range d.Events {
				events[e.Kind]++
			}
			// Only the newest events are kept: count only when none was
			// dropped.
			full := len(d.Events) >= findings.MaxEventsPerFinding
			for kind, n := range fa.answered {
				if !full && (events[kind] < n || events[kind] > n+fa.unknown[kind]) {
					t.Errorf("finding %s on %s: %d %s events, want %d answered 2xx (and at most %d unanswered)",
						id, in.name, events[kind], kind, n, fa.unknown[kind])
				}
			}
			if fa.last == nil || !fa.lastOK {
				continue
			}
			w, g := fa.last.Finding, d.Finding.Finding
			if !equalTimes(g.AcknowledgedAt, w.AcknowledgedAt) || !equalTimes(g.SnoozedUntil, w.SnoozedUntil) ||
				!equalTimes(g.DismissedAt, w.DismissedAt) || g.DismissedReason != w.DismissedReason || g.Suppressed != w.Suppressed {
				t.Errorf("finding %s on %s: operator state %s, the last answer said %s", id, in.name, actState(g), actState(w))
			}
		}
	}
}

// missingSpan says when the missing silences were created and names
// the first and last: a window of lost changes, or scattered ones.
func missingSpan(ss []findings.Silence) string {
	slices.SortFunc(ss, func(a, b findings.Silence) int { return a.CreatedAt.Compare(b.CreatedAt) })
	first, last := ss[0], ss[len(ss)-1]
	return fmt.Sprintf("created %s (%s, %s) to %s (%s, %s)", first.CreatedAt.Format(time.RFC3339Nano), first.ID, first.Matchers.Resource,
		last.CreatedAt.Format(time.RFC3339Nano), last.ID, last.Matchers.Resource)
}

func equalTimes(a, b *time.Time) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Equal(*b))
}

// actState is what operators set on a finding, for a report.
func actState(f findings.Finding) string {
	return fmt.Sprintf("acked %v snoozed %v dismissed %v (%q) suppressed %v", f.AcknowledgedAt, f.SnoozedUntil, f.DismissedAt, f.DismissedReason, f.Suppressed)
}

func (l *chaosLoad) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	acts := 0
	for _, fa := range l.acts {
		for _, n := range fa.answered {
			acts += n
		}
	}
	return fmt.Sprintf("%d silences and %d finding actions answered 2xx, %d refused, %d unknown (503 codes %v), slowest answer %s",
		len(l.silences), acts, l.by[refused], l.by[unknown], l.codes503, l.slowest.Round(time.Millisecond))
}

// Tables and columns each instance keeps for itself (store/capture.go
// replicaSkipTables and replicaSkipColumns): not compared.
var (
	localTables  = []string{"outbox", "outbox_sent", "replica_state", "run_list", "findings_version", "goose_db_version", "usage_points", "usage_series", "usage_version"}
	localColumns = []string{"runs.report", "runs.exchange", "remediation_sessions.transcript", "remediation_sessions.exchange"}
)

// sameReplicas compares every replicated table of the instances'
// databases, row by row, until they agree (a run may be applying).
func sameReplicas(t *testing.T, nodes []*instance) {
	t.Helper()
	var diff string
	testkit.EventuallyState(t, 20*time.Second, "every database holds the same replicated rows", func() (bool, string) {
		want := replicaRows(t, filepath.Join(nodes[0].data, daemon.DBFile))
		for _, in := range nodes[1:] {
			got := replicaRows(t, filepath.Join(in.data, daemon.DBFile))
			if d := rowsDiff(got, want); d != "" {
				diff = in.name + " vs " + nodes[0].name + ": " + d
				return false, diff
			}
		}
		return true, ""
	})
}

// replicaRows reads every replicated table of the database at path, each
// row as its replicated columns' values, sorted.
func replicaRows(t *testing.T, path string) map[string][]string {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin() // one snapshot of every table
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	rows, err := tx.Query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(localTables, n) {
			tables = append(tables, n)
		}
	}
	rows.Close()
	out := map[string][]string{}
	for _, tb := range tables {
		cr, err := tx.Query("SELECT name FROM pragma_table_info(?) ORDER BY cid", tb)
		if err != nil {
			t.Fatal(err)
		}
		var cols []string
		for cr.Next() {
			var c string
			if err := cr.Scan(&c); err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(localColumns, tb+"."+c) {
				cols = append(cols, `"`+c+`"`)
			}
		}
		cr.Close()
		r, err := tx.Query("SELECT " + strings.Join(cols, ", ") + ` FROM "` + tb + `"`)
		if err != nil {
			t.Fatalf("read %s: %v", tb, err)
		}
		var list []string
		for r.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := r.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			parts := make([]string, len(cols))
			for i, v := range vals {
				if b, ok := v.([]byte); ok {
					v = string(b)
				}
				parts[i] = fmt.Sprintf("%s=%v", cols[i], v)
			}
			list = append(list, strings.Join(parts, " "))
		}
		r.Close()
		slices.Sort(list)
		out[tb] = list
	}
	return out
}

// rowsDiff names the first table whose rows differ, with a row each side
// lacks.
func rowsDiff(got, want map[string][]string) string {
	for _, tb := range slices.Sorted(mapKeys(want, got)) {
		g, w := got[tb], want[tb]
		if slices.Equal(g, w) {
			continue
		}
		var only []string
		for _, r := range g {
			if _, ok := slices.BinarySearch(w, r); !ok {
				only = append(only, "+ "+r)
			}
		}
		for _, r := range w {
			if _, ok := slices.BinarySearch(g, r); !ok {
				only = append(only, "- "+r)
			}
		}
		if len(only) > 6 {
			only = append(only[:6], fmt.Sprintf("... %d more", len(only)-6))
		}
		return fmt.Sprintf("table %s: %d rows vs %d\n%s", tb, len(g), len(w), strings.Join(only, "\n"))
	}
	return ""
}

func mapKeys(ms ...map[string][]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		seen := map[string]bool{}
		for _, m := range ms {
			for k := range m {
				if !seen[k] {
					seen[k] = true
					if !yield(k) {
						return
					}
				}
			}
		}
	}
}

package main

import (
	"context"
	"fmt"
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
)

// The lease TTL of TestClusterFreezeKeepsAnsweredActions, and how many
// silences the writer answers in a round before it is frozen.
const (
	freezeTTL   = 2 * time.Second
	freezeAfter = 15
)

// allSilences pages through every silence an instance lists, by id.
func allSilences(t *testing.T, c *api.Client) map[string]findings.Silence {
	t.Helper()
	out := map[string]findings.Silence{}
	page := findings.Page{Limit: findings.MaxPageLimit}
	for {
		l, err := c.SilencesPage(context.Background(), false, page)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range l.Silences {
			out[s.ID] = s
		}
		if l.NextCursor == "" {
			return out
		}
		page.Cursor = l.NextCursor
	}
}

// caughtUp reports whether in has applied every state change writer
// published and serves reads: a diverged instance re-seeds itself first
// (docs/CLUSTER.md), slower on a loaded machine. A position either side
// could not read (last_seq 0, behind) is no answer.
func caughtUp(in, writer *instance) bool {
	s, ws := in.status(), writer.status()
	return s != nil && ws != nil && s.Replica != nil && ws.Replica != nil && ws.Replica.Writer && ws.Replica.LastSeq > 0 &&
		s.Replica.AppliedSeq == ws.Replica.LastSeq && !s.Replica.Behind && s.Replica.Diverged == ""
}

// operatorLoad creates silences through every instance until stop, and
// records each one answered 2xx, whole, as the answer gave it.
type operatorLoad struct {
	mu       sync.Mutex
	answered map[string]findings.Silence
	by       map[string]int // answers per instance
	// after, when set, is called (with the instance's answer count so
	// far) right after each answer of that instance.
	after map[string]func(n int)
	wg    sync.WaitGroup
}

func (l *operatorLoad) run(ctx context.Context, round int, nodes []*instance) {
	for _, in := range nodes {
		for g := range loadPerInstance {
			l.wg.Add(1)
			go l.operator(ctx, in, fmt.Sprintf("%s-%d-%d", in.name, round, g), round)
		}
	}
}

// loadPerInstance is how many operators act through each instance at
// once.
const loadPerInstance = 3

// operator creates silences through in until ctx ends. A request that
// takes over 3 s is given up (a standby waits up to 30 s for a frozen
// writer).
func (l *operatorLoad) operator(ctx context.Context, in *instance, tag string, round int) {
	defer l.wg.Done()
	for i := 0; ctx.Err() == nil; i++ {
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		s, err := in.c.AddSilence(rctx, api.SilenceRequest{Matchers: findings.Matchers{Resource: fmt.Sprintf("vm/%s-%d", tag, i)},
			Comment: "freeze round " + fmt.Sprint(round), Author: "op", Duration: "1h"})
		cancel()
		if err != nil {
			continue // not answered 2xx: nothing promised
		}
		l.mu.Lock()
		l.answered[s.ID] = s
		l.by[in.name]++
		n, after := l.by[in.name], l.after[in.name]
		l.mu.Unlock()
		if after != nil {
			after(n)
		}
	}
}

func (l *operatorLoad) count(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.by[name]
}

// TestClusterFreezeKeepsAnsweredActions: three `patrold serve` on a
// three-node JetStream cluster (R3) take silences through every
// instance, three operators each. Three times, the writer is frozen
// with SIGSTOP right after it answered its freezeAfter-th silence of the
// round, while the others' are in flight, forwarded to it. The lease
// moves to a survivor, which answers too. Then:
//   - every silence answered 2xx is on every survivor, whole, as the
//     answer gave it;
//   - the frozen instance, given SIGCONT, resumes as a ready, caught-up
//     standby listing exactly the silences the writer lists, whole (a
//     change it wrote as a deposed writer makes it re-seed itself).
func TestClusterFreezeKeepsAnsweredActions(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	nodes, writer := faultCluster(t)
	load := &operatorLoad{answered: map[string]findings.Silence{}, by: map[string]int{}}
	for round := 1; round <= 3; round++ {
		frozen := writer
		survivors := slices.DeleteFunc(slices.Clone(nodes), func(in *instance) bool { return in == frozen })
		base := load.count(frozen.name)
		stopped := make(chan time.Time, 1)
		var once sync.Once
		load.mu.Lock()
		load.after = map[string]func(int){frozen.name: func(n int) {
			if n >= base+freezeAfter {
				once.Do(func() {
					if err := frozen.p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
						t.Error(err)
					}
					stopped <- time.Now()
				})
			}
		}}
		load.mu.Unlock()
		ctx, cancel := context.WithCancel(context.Background())
		load.run(ctx, round, nodes)
		var at time.Time
		select {
		case at = <-stopped:
		case <-time.After(30 * time.Second):
			cancel()
			t.Fatalf("round %d: %s answered %d silences in 30s, want %d", round, frozen.name, load.count(frozen.name)-base, freezeAfter)
		}
		// The lease moves; the new writer answers silences too.
		next, _ := writerOf(t, survivors, 2*freezeTTL+20*time.Second)
		took := time.Since(at)
		nextBase := load.count(next.name)
		testkit.Eventually(t, 20*time.Second, "the new writer answers", func() bool { return load.count(next.name) >= nextBase+3 })
		cancel()
		load.wg.Wait()
		t.Logf("round %d: %s frozen; %s writes %s later; %d silences answered so far", round, frozen.name, next.name,
			took.Round(time.Millisecond), len(load.answered))

		// Every answered silence is on every survivor, whole.
		for _, in := range survivors {
			testkit.Eventually(t, 60*time.Second, in.name+" applied what the writer published", func() bool { return caughtUp(in, next) })
			got := allSilences(t, in.c)
			for id, want := range load.answered {
				if g, ok := got[id]; !ok {
					t.Fatalf("round %d: silence %s, answered 2xx, is missing on %s", round, id, in.name)
				} else if !reflect.DeepEqual(g, want) {
					t.Fatalf("round %d: silence %s on %s is\n%+v\nthe answer said\n%+v", round, id, in.name, g, want)
				}
			}
		}

		// The frozen instance resumes as a standby and converges: ready,
		// it lists exactly the silences the writer lists, whole. A change
		// it committed but had not published when it froze (never
		// answered 2xx) is fenced on every replica, itself included: its
		// database diverged and is re-seeded from a caught-up instance.
		frozen.p.signal(syscall.SIGCONT)
		var mine, theirs map[string]findings.Silence
		testkit.Eventually(t, 60*time.Second, frozen.name+" resumes as a ready, caught-up standby listing the writer's silences", func() bool {
			s := frozen.status()
			if s == nil || s.Role != string(cluster.RoleStandby) || !caughtUp(frozen, next) || !frozen.ready() {
				return false
			}
			mine, theirs = allSilences(t, frozen.c), allSilences(t, next.c)
			return reflect.DeepEqual(mine, theirs)
		})
		if strings.Contains(frozen.p.stderr.String(), "DATABASE DIVERGED") {
			t.Logf("round %d: %s diverged (its own changes fenced) and re-seeded itself", round, frozen.name)
		}
		writer = next
	}
}

// faultCluster starts three instances on a three-server JetStream
// cluster, reading the example fleet with faults (runs every 2 s, lease
// TTL freezeTTL), connects to each and returns them with the writer.
func faultCluster(t *testing.T) ([]*instance, *instance) {
	t.Helper()
	snap, err := filepath.Abs(filepath.Join("..", "..", "examples", "small-faults.json"))
	if err != nil {
		t.Fatal(err)
	}
	urls := natstest.Cluster(t, 3)
	nodes := clusterNodes(t, urls, testkit.KeyFile(t),
		"schedule: {cron: '@every 2s', startup_delay: 1h}\nsource: {kind: file, file: {path: "+snap+"}}\n", freezeTTL)
	for _, in := range nodes {
		in.start(t)
	}
	for _, in := range nodes {
		in.connect(t)
	}
	writer, _ := writerOf(t, nodes, 30*time.Second)
	return nodes, writer
}

package main

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
)

// TestClusterKillRightAfterCommit: three `patrold serve` on a three-node
// JetStream cluster take silences through every instance. The writer is
// killed with SIGKILL right after it answered its freezeAfter-th
// silence, while others are in flight (committed on it, perhaps not yet
// published). Then:
//   - every silence answered 2xx is on every survivor, whole;
//   - the killed instance, restarted on its data_dir, drops what it
//     committed that the stream never got, re-seeds itself from a
//     survivor, and then lists exactly the silences the writer lists,
//     whole: no row of its own is left that the others lack.
func TestClusterKillRightAfterCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	nodes, killed := faultCluster(t)
	survivors := slices.DeleteFunc(slices.Clone(nodes), func(in *instance) bool { return in == killed })
	load := &operatorLoad{answered: map[string]findings.Silence{}, by: map[string]int{}}
	stopped := make(chan time.Time, 1)
	var once sync.Once
	load.after = map[string]func(int){killed.name: func(n int) {
		if n >= freezeAfter {
			once.Do(func() {
				if err := killed.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Error(err)
				}
				stopped <- time.Now()
			})
		}
	}}
	ctx, cancel := context.WithCancel(context.Background())
	load.run(ctx, 1, nodes)
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatalf("%s answered %d silences in 30s, want %d", killed.name, load.count(killed.name), freezeAfter)
	}
	if code := killed.p.exit(10 * time.Second); code != -int(syscall.SIGKILL) {
		t.Fatalf("%s exited %d, want killed", killed.name, code)
	}
	next, _ := writerOf(t, survivors, 2*freezeTTL+20*time.Second)
	nextBase := load.count(next.name)
	testkit.Eventually(t, 20*time.Second, "the new writer answers", func() bool { return load.count(next.name) >= nextBase+3 })
	cancel()
	load.wg.Wait()
	for _, in := range survivors {
		testkit.Eventually(t, 20*time.Second, in.name+" applied what the writer published", func() bool { return caughtUp(in, next) })
		got := allSilences(t, in.c)
		for id, want := range load.answered {
			if g, ok := got[id]; !ok {
				t.Fatalf("silence %s, answered 2xx, is missing on %s", id, in.name)
			} else if !reflect.DeepEqual(g, want) {
				t.Fatalf("silence %s on %s is\n%+v\nthe answer said\n%+v", id, in.name, g, want)
			}
		}
	}

	// The killed instance restarts on its own database and converges.
	killed.start(t)
	killed.connect(t)
	testkit.EventuallyState(t, 60*time.Second, killed.name+" re-seeded, caught up and lists exactly the writer's silences", func() (bool, string) {
		s := killed.status()
		if s == nil || s.Role != string(cluster.RoleStandby) || s.Replica == nil || s.Replica.Diverged != "" || !s.Ready || !caughtUp(killed, next) {
			return false, "status " + statusLine(s)
		}
		mine, theirs := allSilences(t, killed.c), allSilences(t, next.c)
		if !reflect.DeepEqual(mine, theirs) {
			return false, "silences differ"
		}
		return true, ""
	})
	log := killed.p.stderr.String()
	if strings.Contains(log, "unsent state changes dropped") && !strings.Contains(log, "diverged database re-seeded") {
		t.Fatalf("%s dropped unsent changes but never re-seeded:\n%s", killed.name, log)
	}
	t.Logf("%d silences answered; %s re-seeded itself: %v", len(load.answered), killed.name, strings.Contains(log, "diverged database re-seeded"))
}

// statusLine is what a status says of the role, readiness and replica,
// for a condition's report.
func statusLine(s *api.Status) string {
	if s == nil {
		return "none"
	}
	return fmt.Sprintf("role %s ready %v unready %+v replica %+v", s.Role, s.Ready, s.Unready, s.Replica)
}

package daemon

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/patrol"
)

type schedProbe struct {
	mu      sync.Mutex
	runs    []string // "trigger@offset"
	leader  bool
	last    *time.Time
	started time.Time
}

func (p *schedProbe) hooks() schedHooks {
	return schedHooks{
		run: func(tr patrol.Trigger) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.runs = append(p.runs, string(tr)+"@"+time.Since(p.started).String())
		},
		leading:      func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.leader },
		lastComplete: func(context.Context) (*time.Time, error) { return p.last, nil },
		now:          time.Now,
		log:          slog.New(slog.DiscardHandler),
	}
}

func (p *schedProbe) got() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.runs...)
}

func cfgWith(t *testing.T, yaml string) *config.Config {
	cfg, err := config.Load([]byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func equalRuns(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestScheduleWithFakeClock drives the cron schedule and the startup run
// with testing/synctest: no sleeps, exact times.
func TestScheduleWithFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &schedProbe{leader: true, started: time.Now()}
		cfg := cfgWith(t, "schedule: {cron: '@every 1h', startup_delay: 30s, skip_startup_if_recent: 1h}\n")
		s, err := newScheduler(p.hooks(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		s.start(ctx, cfg)
		time.Sleep(2*time.Hour + time.Minute)
		synctest.Wait()
		want := []string{"startup@30s", "scheduled@1h0m0s", "scheduled@2h0m0s"}
		if got := p.got(); !equalRuns(got, want) {
			t.Fatalf("runs %v, want %v", got, want)
		}
		// Reload to a 15-minute schedule: it applies without restart.
		if err := s.reschedule(cfgWith(t, "schedule: {cron: '*/15 * * * *'}\n")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(31 * time.Minute)
		synctest.Wait()
		if got := p.got(); len(got) != 5 {
			t.Fatalf("after reschedule: %v", got)
		}
		// Losing the lease stops scheduled runs.
		p.mu.Lock()
		p.leader = false
		p.mu.Unlock()
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := p.got(); len(got) != 5 {
			t.Fatalf("non-leader ran: %v", got)
		}
		cancel()
		s.stop()
	})
}

func TestStartupSkippedAfterRecentRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		recent := time.Now().Add(-20 * time.Minute)
		p := &schedProbe{leader: true, started: time.Now(), last: &recent}
		cfg := cfgWith(t, "schedule: {cron: '@every 6h', startup_delay: 30s, skip_startup_if_recent: 1h}\n")
		s, _ := newScheduler(p.hooks(), cfg)
		s.start(context.Background(), cfg)
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := p.got(); len(got) != 0 {
			t.Fatalf("startup run not skipped: %v", got)
		}
		old := time.Now().Add(-2 * time.Hour)
		p.last = &old
		s2, _ := newScheduler(p.hooks(), cfg)
		s2.start(context.Background(), cfg)
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := p.got(); len(got) != 1 {
			t.Fatalf("startup run after an old run: %v", got)
		}
		s.stop()
		s2.stop()
	})
}

package patrol

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

type schedProbe struct {
	mu      sync.Mutex
	runs    []string // "trigger@offset"
	leader  bool
	last    *time.Time
	started time.Time
}

func (p *schedProbe) hooks() SchedulerHooks {
	return SchedulerHooks{
		Run: func(tr Trigger) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.runs = append(p.runs, string(tr)+"@"+time.Since(p.started).String())
		},
		Leading:      func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.leader },
		LastComplete: func(context.Context) (*time.Time, error) { return p.last, nil },
		Now:          time.Now,
		Logger:       slog.New(slog.DiscardHandler),
	}
}

func (p *schedProbe) got() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.runs...)
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
		s, err := NewScheduler(p.hooks(), "@every 1h")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		s.Start(ctx, 30*time.Second, time.Hour)
		time.Sleep(2*time.Hour + time.Minute)
		synctest.Wait()
		want := []string{"startup@30s", "scheduled@1h0m0s", "scheduled@2h0m0s"}
		if got := p.got(); !equalRuns(got, want) {
			t.Fatalf("runs %v, want %v", got, want)
		}
		// Reload to a 15-minute schedule: it applies without restart.
		if err := s.Reschedule("*/15 * * * *"); err != nil {
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
		s.Stop()
	})
}

func TestStartupSkippedAfterRecentRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		recent := time.Now().Add(-20 * time.Minute)
		p := &schedProbe{leader: true, started: time.Now(), last: &recent}
		s, _ := NewScheduler(p.hooks(), "@every 6h")
		s.Start(context.Background(), 30*time.Second, time.Hour)
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := p.got(); len(got) != 0 {
			t.Fatalf("startup run not skipped: %v", got)
		}
		old := time.Now().Add(-2 * time.Hour)
		p.last = &old
		s2, _ := NewScheduler(p.hooks(), "@every 6h")
		s2.Start(context.Background(), 30*time.Second, time.Hour)
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := p.got(); len(got) != 1 {
			t.Fatalf("startup run after an old run: %v", got)
		}
		s.Stop()
		s2.Stop()
	})
}

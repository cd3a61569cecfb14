package daemon

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/patrol"
)

// schedHooks is what the scheduler needs from the daemon; tests provide
// their own.
type schedHooks struct {
	run          func(patrol.Trigger)
	leading      func() bool
	lastComplete func(context.Context) (*time.Time, error)
	now          func() time.Time
	log          *slog.Logger
}

// scheduler runs scheduled ticks on the configured cron schedule (UTC) and
// the startup run after the startup delay, unless a complete run finished
// within skip_startup_if_recent. Only the lease holder runs either.
type scheduler struct {
	h     schedHooks
	cron  *cron.Cron
	mu    sync.Mutex
	entry cron.EntryID
	spec  string
	ctx   context.Context
	timer *time.Timer
}

func newScheduler(h schedHooks, cfg *config.Config) (*scheduler, error) {
	s := &scheduler{h: h, cron: cron.New(cron.WithParser(config.CronParser), cron.WithLocation(time.UTC))}
	return s, s.reschedule(cfg)
}

func (d *Daemon) schedHooks() schedHooks {
	return schedHooks{run: d.runInBackground, leading: d.msg.leader, lastComplete: d.store.LastCompleteRun, now: d.opts.Now, log: d.log}
}

func (s *scheduler) start(ctx context.Context, cfg *config.Config) {
	s.mu.Lock()
	s.ctx = ctx
	s.timer = time.AfterFunc(cfg.Schedule.StartupDelay, func() { s.startupRun(ctx, cfg.Schedule.SkipStartupIfRecent) })
	s.mu.Unlock()
	s.cron.Start()
}

func (s *scheduler) startupRun(ctx context.Context, skipIfRecent time.Duration) {
	if ctx.Err() != nil || !s.h.leading() {
		return
	}
	last, err := s.h.lastComplete(ctx)
	if err == nil && last != nil && s.h.now().Sub(*last) < skipIfRecent {
		s.h.log.Info("startup run skipped: a complete run finished recently", "finished_at", last.Format(time.RFC3339))
		return
	}
	s.h.run(patrol.TriggerStartup)
}

func (s *scheduler) tick() {
	s.mu.Lock()
	ctx := s.ctx
	s.mu.Unlock()
	if ctx == nil || ctx.Err() != nil {
		return
	}
	if !s.h.leading() {
		s.h.log.Debug("scheduled tick left to the lease holder")
		return
	}
	s.h.run(patrol.TriggerScheduled)
}

// reschedule replaces the cron entry when the spec changed.
func (s *scheduler) reschedule(cfg *config.Config) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cfg.Schedule.Cron == s.spec {
		return nil
	}
	id, err := s.cron.AddFunc(cfg.Schedule.Cron, s.tick)
	if err != nil {
		return err
	}
	if s.entry != 0 {
		s.cron.Remove(s.entry)
	}
	s.entry, s.spec = id, cfg.Schedule.Cron
	return nil
}

func (s *scheduler) stop() {
	s.mu.Lock()
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Unlock()
	<-s.cron.Stop().Done()
}

package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/patrol"
)

// scheduler runs scheduled ticks on the configured cron schedule and the
// startup run after the startup delay.
type scheduler struct {
	d     *Daemon
	cron  *cron.Cron
	mu    sync.Mutex
	entry cron.EntryID
	spec  string
	ctx   context.Context
	timer *time.Timer
}

func newScheduler(d *Daemon, cfg *config.Config) (*scheduler, error) {
	s := &scheduler{d: d, cron: cron.New(cron.WithParser(config.CronParser), cron.WithLocation(time.UTC))}
	return s, s.reschedule(cfg)
}

func (s *scheduler) start(ctx context.Context) {
	s.mu.Lock()
	s.ctx = ctx
	cfg := s.d.Config()
	s.timer = time.AfterFunc(cfg.Schedule.StartupDelay, func() { s.startupRun(ctx, cfg) })
	s.mu.Unlock()
	s.cron.Start()
}

func (s *scheduler) startupRun(ctx context.Context, cfg *config.Config) {
	if ctx.Err() != nil || !s.leading() {
		return
	}
	last, err := s.d.store.LastCompleteRun(ctx)
	if err == nil && last != nil && s.d.opts.Now().Sub(*last) < cfg.Schedule.SkipStartupIfRecent {
		s.d.log.Info("startup run skipped: a complete run finished recently", "finished_at", last.Format(time.RFC3339))
		return
	}
	s.d.runInBackground(patrol.TriggerStartup)
}

func (s *scheduler) tick() {
	s.mu.Lock()
	ctx := s.ctx
	s.mu.Unlock()
	if ctx == nil || ctx.Err() != nil {
		return
	}
	if !s.leading() {
		s.d.log.Debug("scheduled tick left to the lease holder")
		return
	}
	s.d.runInBackground(patrol.TriggerScheduled)
}

// leading reports whether this instance holds the scheduling lease (always
// true without messaging).
func (s *scheduler) leading() bool { return s.d.msg.leader() }

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

package patrol

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
)

// cronParser parses schedule specs: five standard fields or a descriptor
// (@every 1h, @daily); ScheduleConfig.Validate checks schedule.cron with it.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// SchedulerHooks are what the scheduler needs from its owner: starting a
// run, whether this instance holds the scheduling lease, when the last
// complete run finished.
type SchedulerHooks struct {
	Run     func(Trigger)
	Leading func() bool
	// AwaitLeading, when set, is asked at the startup run when Leading is
	// false: it waits (bounded) for this instance to become the lease
	// holder, e.g. while a restarted instance reclaims its own lease, and
	// reports whether it did.
	AwaitLeading func(context.Context) bool
	LastComplete func(context.Context) (*time.Time, error)
	Now          func() time.Time
	Logger       *slog.Logger
}

// Scheduler runs scheduled ticks on a cron schedule (UTC) and the startup
// run after the startup delay, unless a complete run finished within
// skip-if-recent. Only the lease holder runs either.
type Scheduler struct {
	h     SchedulerHooks
	cron  *cron.Cron
	mu    sync.Mutex
	entry cron.EntryID
	spec  string
	ctx   context.Context
	timer *time.Timer
}

// NewScheduler returns a scheduler on spec; nothing runs until Start.
func NewScheduler(h SchedulerHooks, spec string) (*Scheduler, error) {
	if h.Logger == nil {
		h.Logger = slog.New(slog.DiscardHandler)
	}
	if h.Now == nil {
		h.Now = time.Now
	}
	s := &Scheduler{h: h, cron: cron.New(cron.WithParser(cronParser), cron.WithLocation(time.UTC))}
	return s, s.Reschedule(spec)
}

// Start starts the cron schedule and arms the startup run.
func (s *Scheduler) Start(ctx context.Context, startupDelay, skipStartupIfRecent time.Duration) {
	s.mu.Lock()
	s.ctx = ctx
	s.timer = time.AfterFunc(startupDelay, func() { s.startupRun(ctx, skipStartupIfRecent) })
	s.mu.Unlock()
	s.cron.Start()
}

func (s *Scheduler) startupRun(ctx context.Context, skipIfRecent time.Duration) {
	if ctx.Err() != nil {
		return
	}
	if !s.h.Leading() && (s.h.AwaitLeading == nil || !s.h.AwaitLeading(ctx)) {
		if ctx.Err() == nil {
			s.h.Logger.Info("startup run left to the lease holder: this instance is not the leader")
		}
		return
	}
	last, err := s.h.LastComplete(ctx)
	if err == nil && last != nil && s.h.Now().Sub(*last) < skipIfRecent {
		s.h.Logger.Info("startup run skipped: a complete run finished recently", "finished_at", last.Format(time.RFC3339))
		return
	}
	s.h.Run(TriggerStartup)
}

func (s *Scheduler) tick() {
	s.mu.Lock()
	ctx := s.ctx
	s.mu.Unlock()
	if ctx == nil || ctx.Err() != nil {
		return
	}
	if !s.h.Leading() {
		s.h.Logger.Debug("scheduled tick left to the lease holder")
		return
	}
	s.h.Run(TriggerScheduled)
}

// Reschedule replaces the cron entry when the spec changed (a reload).
func (s *Scheduler) Reschedule(spec string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if spec == s.spec {
		return nil
	}
	id, err := s.cron.AddFunc(spec, s.tick)
	if err != nil {
		return err
	}
	if s.entry != 0 {
		s.cron.Remove(s.entry)
	}
	s.entry, s.spec = id, spec
	return nil
}

// Stop stops the schedule and the pending startup run and waits for a
// tick in progress to return.
func (s *Scheduler) Stop() {
	s.mu.Lock()
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Unlock()
	<-s.cron.Stop().Done()
}

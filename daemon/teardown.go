package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
)

// teardown is the composition root's stop stack: each part pushes its stop
// right after it was created, and stop runs them last-in first-out, once.
// A start that fails half-way stops exactly what it had started.
type teardown struct {
	mu    sync.Mutex
	parts []stopper
	done  bool
	log   *slog.Logger
}

type stopper struct {
	name string
	stop func(context.Context) error
}

// push registers the stop of the part just created. A push after stop
// (a part created while the root was stopping) is stopped at once.
func (t *teardown) push(name string, stop func(context.Context) error) {
	t.mu.Lock()
	if !t.done {
		t.parts = append(t.parts, stopper{name, stop})
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	_ = t.run(context.Background(), stopper{name, stop})
}

// stop runs every registered stop in reverse order of registration and
// joins their errors (each named by its part). Every call after the first
// returns nil.
func (t *teardown) stop(ctx context.Context) error {
	t.mu.Lock()
	if t.done {
		t.mu.Unlock()
		return nil
	}
	t.done = true
	parts := t.parts
	t.parts = nil
	t.mu.Unlock()
	var errs []error
	for i := len(parts) - 1; i >= 0; i-- {
		errs = append(errs, t.run(ctx, parts[i]))
	}
	return errors.Join(errs...)
}

func (t *teardown) run(ctx context.Context, p stopper) error {
	err := p.stop(ctx)
	if t.log != nil {
		t.log.Debug("part stopped", "part", p.name, "err", err)
	}
	if err != nil {
		return fmt.Errorf("stop %s: %w", p.name, err)
	}
	return nil
}

package model

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Breaker defaults.
const (
	DefaultBreakerThreshold  = 3
	DefaultBreakerBackoff    = time.Second
	DefaultBreakerMaxBackoff = 5 * time.Minute
)

// BreakerState is the state of a circuit breaker.
type BreakerState string

// Breaker states.
const (
	BreakerClosed   BreakerState = "closed"
	BreakerOpen     BreakerState = "open"
	BreakerHalfOpen BreakerState = "half_open"
)

// BreakerOptions configure a Breaker. Zero values take the defaults.
type BreakerOptions struct {
	Threshold  int              // consecutive counted failures that open the circuit
	Backoff    time.Duration    // first open period
	MaxBackoff time.Duration    // cap of the doubling open period
	Now        func() time.Time // clock; time.Now when nil
	// OnStateChange, when set, is called (outside the lock) on every transition.
	OnStateChange func(from, to BreakerState)
}

// Breaker is a Provider wrapper that stops calling a failing provider.
// Threshold consecutive transient (or malformed) failures open it; while
// open, calls fail fast with ErrCircuitOpen. When the open period has passed
// one trial call goes through (half open): success closes the circuit and
// resets the backoff, a counted failure re-opens it for twice as long (up to
// MaxBackoff). Auth, bad-request and canceled outcomes neither count nor
// reset anything.
type Breaker struct {
	next Provider
	opts BreakerOptions

	mu        sync.Mutex
	state     BreakerState
	failures  int
	backoff   time.Duration
	openUntil time.Time
	probing   bool
}

var _ Provider = (*Breaker)(nil)

// NewBreaker wraps next.
func NewBreaker(next Provider, opts BreakerOptions) (*Breaker, error) {
	if next == nil {
		return nil, errors.New("model breaker: provider is nil")
	}
	if opts.Threshold == 0 {
		opts.Threshold = DefaultBreakerThreshold
	}
	if opts.Backoff == 0 {
		opts.Backoff = DefaultBreakerBackoff
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = DefaultBreakerMaxBackoff
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	switch {
	case opts.Threshold < 0:
		return nil, fmt.Errorf("model breaker: threshold %d must be positive", opts.Threshold)
	case opts.Backoff < 0 || opts.MaxBackoff < opts.Backoff:
		return nil, fmt.Errorf("model breaker: backoff %s must be positive and at most max backoff %s", opts.Backoff, opts.MaxBackoff)
	}
	return &Breaker{next: next, opts: opts, state: BreakerClosed, backoff: opts.Backoff}, nil
}

// Name returns the wrapped provider's name.
func (b *Breaker) Name() string { return b.next.Name() }

// State returns the current state as of now.
func (b *Breaker) State() BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == BreakerOpen && !b.opts.Now().Before(b.openUntil) {
		return BreakerHalfOpen
	}
	return b.state
}

// Chat calls the wrapped provider unless the circuit is open.
func (b *Breaker) Chat(ctx context.Context, req Request) (*Response, error) {
	if err := b.admit(); err != nil {
		return nil, err
	}
	resp, err := b.next.Chat(ctx, req)
	b.settle(err)
	return resp, err
}

func (b *Breaker) admit() error {
	b.mu.Lock()
	now := b.opts.Now()
	from := b.state
	switch b.state {
	case BreakerOpen:
		if now.Before(b.openUntil) {
			wait := b.openUntil.Sub(now)
			b.mu.Unlock()
			return b.openError(wait)
		}
		b.state = BreakerHalfOpen
		b.probing = true
	case BreakerHalfOpen:
		if b.probing {
			b.mu.Unlock()
			return b.openError(0)
		}
		b.probing = true
	}
	to := b.state
	b.mu.Unlock()
	b.notify(from, to)
	return nil
}

func (b *Breaker) openError(wait time.Duration) error {
	msg := "failing fast while the provider recovers"
	if wait > 0 {
		msg = fmt.Sprintf("failing fast for another %s", wait.Round(time.Millisecond))
	}
	return &Error{Provider: b.next.Name(), Kind: ErrorTransient, Err: fmt.Errorf("%w: %s", ErrCircuitOpen, msg)}
}

func (b *Breaker) settle(err error) {
	b.mu.Lock()
	from := b.state
	wasProbe := b.probing
	b.probing = false
	switch kind := KindOf(err); {
	case err == nil:
		b.state, b.failures, b.backoff = BreakerClosed, 0, b.opts.Backoff
	case kind == ErrorTransient || kind == ErrorMalformed:
		b.failures++
		if wasProbe {
			b.backoff = min(b.backoff*2, b.opts.MaxBackoff)
			b.open()
		} else if b.state == BreakerClosed && b.failures >= b.opts.Threshold {
			b.open()
		}
	}
	to := b.state
	b.mu.Unlock()
	b.notify(from, to)
}

func (b *Breaker) open() {
	b.state = BreakerOpen
	b.openUntil = b.opts.Now().Add(b.backoff)
}

func (b *Breaker) notify(from, to BreakerState) {
	if from != to && b.opts.OnStateChange != nil {
		b.opts.OnStateChange(from, to)
	}
}

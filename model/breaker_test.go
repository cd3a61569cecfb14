package model

import (
	"context"
	"errors"
	"testing"
	"time"
)

// fakeProvider answers with the next error of errs (nil: success).
type fakeProvider struct {
	errs  []error
	calls int
}

func (f *fakeProvider) Name() string { return "fake" }
func (f *fakeProvider) Chat(context.Context, Request) (*Response, error) {
	f.calls++
	if len(f.errs) == 0 {
		return &Response{Text: "ok"}, nil
	}
	err := f.errs[0]
	f.errs = f.errs[1:]
	if err != nil {
		return nil, err
	}
	return &Response{Text: "ok"}, nil
}

func transient() error {
	return &Error{Provider: "fake", Kind: ErrorTransient, Status: 503, Err: errors.New("busy")}
}
func authErr() error {
	return &Error{Provider: "fake", Kind: ErrorAuth, Status: 401, Err: errors.New("no")}
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestBreaker(t *testing.T, p Provider) (*Breaker, *clock) {
	t.Helper()
	c := &clock{t: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
	b, err := NewBreaker(p, BreakerOptions{Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	return b, c
}

func call(b *Breaker) error {
	_, err := b.Chat(context.Background(), Request{})
	return err
}

func TestBreakerOpensAfterThreeTransientFailures(t *testing.T) {
	p := &fakeProvider{errs: []error{transient(), transient(), transient()}}
	b, _ := newTestBreaker(t, p)
	for i := range 3 {
		if err := call(b); errors.Is(err, ErrCircuitOpen) {
			t.Fatalf("call %d failed fast before the threshold", i+1)
		}
	}
	if b.State() != BreakerOpen {
		t.Fatalf("state = %s after 3 transient failures", b.State())
	}
	err := call(b)
	if !errors.Is(err, ErrCircuitOpen) || KindOf(err) != ErrorTransient {
		t.Fatalf("open breaker did not fail fast: %v", err)
	}
	if p.calls != 3 {
		t.Fatalf("provider called %d times; an open breaker must not call it", p.calls)
	}
}

func TestBreakerBackoffDoublesToFiveMinutesAndSuccessCloses(t *testing.T) {
	p := &fakeProvider{}
	for range 3 + 12 {
		p.errs = append(p.errs, transient())
	}
	b, c := newTestBreaker(t, p)
	for range 3 {
		_ = call(b)
	}
	want := time.Second
	for i := range 12 {
		c.advance(want - time.Millisecond)
		if err := call(b); !errors.Is(err, ErrCircuitOpen) {
			t.Fatalf("step %d: call before the %s backoff ended went through: %v", i, want, err)
		}
		c.advance(time.Millisecond)
		if b.State() != BreakerHalfOpen {
			t.Fatalf("step %d: state = %s once the backoff passed", i, b.State())
		}
		if err := call(b); errors.Is(err, ErrCircuitOpen) {
			t.Fatalf("step %d: trial call refused", i)
		}
		want = min(want*2, DefaultBreakerMaxBackoff)
	}
	if want != 5*time.Minute {
		t.Fatalf("backoff reached %s, want the 5 min cap", want)
	}
	c.advance(want)
	if err := call(b); err != nil || b.State() != BreakerClosed {
		t.Fatalf("success did not close: %v %s", err, b.State())
	}
	// Closed again with the backoff reset: three more failures open it for 1s.
	p.errs = []error{transient(), transient(), transient()}
	for range 3 {
		_ = call(b)
	}
	c.advance(time.Second)
	if b.State() != BreakerHalfOpen {
		t.Fatalf("backoff not reset after success: %s", b.State())
	}
}

func TestBreakerIgnoresAuthBadRequestAndCanceled(t *testing.T) {
	canceled := &Error{Provider: "fake", Kind: ErrorCanceled, Err: context.Canceled}
	bad := &Error{Provider: "fake", Kind: ErrorBadRequest, Status: 400, Err: errors.New("bad")}
	p := &fakeProvider{errs: []error{authErr(), bad, canceled, authErr(), bad, canceled, transient(), transient(), authErr()}}
	b, _ := newTestBreaker(t, p)
	for range 9 {
		_ = call(b)
	}
	if b.State() != BreakerClosed {
		t.Fatalf("state = %s: only 2 transient failures happened", b.State())
	}
	_ = call(b) // success resets the count
	p.errs = []error{transient(), transient(), nil, transient()}
	for range 4 {
		_ = call(b)
	}
	if b.State() != BreakerClosed {
		t.Fatal("failures separated by a success must not open the breaker")
	}
}

func TestBreakerHalfOpenAllowsOneTrial(t *testing.T) {
	p := &fakeProvider{errs: []error{transient(), transient(), transient()}}
	b, c := newTestBreaker(t, p)
	for range 3 {
		_ = call(b)
	}
	c.advance(time.Second)
	if err := b.admit(); err != nil {
		t.Fatal(err)
	}
	if err := b.admit(); !errors.Is(err, ErrCircuitOpen) {
		t.Fatalf("second concurrent trial admitted: %v", err)
	}
	b.settle(nil)
	if b.State() != BreakerClosed {
		t.Fatal("successful trial did not close")
	}
}

func TestNewBreakerValidates(t *testing.T) {
	if _, err := NewBreaker(nil, BreakerOptions{}); err == nil {
		t.Fatal("nil provider accepted")
	}
	if _, err := NewBreaker(&fakeProvider{}, BreakerOptions{Backoff: time.Hour, MaxBackoff: time.Minute}); err == nil {
		t.Fatal("backoff above max accepted")
	}
}

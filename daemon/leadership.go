package daemon

import (
	"context"
	"sync"
	"time"
)

// Role is what an instance is among the instances on one NATS.
type Role string

// The roles.
const (
	// RoleSingle: no cluster section; no lease; always the writer.
	RoleSingle Role = "single"
	// RoleLeader: cluster mode, holding the leader lease (the writer).
	RoleLeader Role = "leader"
	// RoleStandby: cluster mode, not holding the lease.
	RoleStandby Role = "standby"
)

// leaseState is the part of bus.Lease leadership reads.
type leaseState interface{ IsLeader() bool }

// Leadership says whether this instance may write now (schedule runs,
// change findings, consume outcomes) and announces each change. A single
// instance is always the writer; in cluster mode the leader lease decides.
// Its zero value is not usable: get one from Root.Leadership.
type Leadership struct {
	clustered bool
	now       func() time.Time
	annMu     sync.Mutex // keeps announcements in order

	mu      sync.Mutex
	lease   leaseState // nil until messaging starts (cluster mode)
	leader  bool       // last announced state
	since   time.Time  // when leader last changed (or the start)
	changed chan struct{}
	subs    []func(leader bool)
}

func newLeadership(clustered bool, now func() time.Time) *Leadership {
	return &Leadership{clustered: clustered, now: now, leader: !clustered, since: now(), changed: make(chan struct{})}
}

// Clustered reports cluster mode (a cluster section).
func (l *Leadership) Clustered() bool { return l.clustered }

// IsLeader reports whether this instance is the writer now: always for a
// single instance; in cluster mode while it holds an unexpired lease.
func (l *Leadership) IsLeader() bool {
	if !l.clustered {
		return true
	}
	l.mu.Lock()
	lease := l.lease
	l.mu.Unlock()
	return lease != nil && lease.IsLeader()
}

// Role is single, leader or standby, as of now.
func (l *Leadership) Role() Role {
	switch {
	case !l.clustered:
		return RoleSingle
	case l.IsLeader():
		return RoleLeader
	}
	return RoleStandby
}

// Since is when leadership last changed (the daemon's start for a single
// instance or an instance that never led).
func (l *Leadership) Since() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.since
}

// Changed returns a channel closed at the next change of leadership; read
// IsLeader after it closes and ask again for the one after.
func (l *Leadership) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// Await waits until this instance is the writer, ctx ends or within has
// passed, and reports whether it is the writer.
func (l *Leadership) Await(ctx context.Context, within time.Duration) bool {
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		ch := l.Changed()
		if l.IsLeader() {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		case <-timer.C:
			return l.IsLeader()
		}
	}
}

// OnChange calls fn with the new state at every change of leadership, in
// order, on the goroutine that observed the change (keep fn short; never
// call back into Leadership's setters from it). A single instance never
// changes.
func (l *Leadership) OnChange(fn func(leader bool)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.subs = append(l.subs, fn)
}

// attach hands the started lease to leadership (cluster mode).
func (l *Leadership) attach(lease leaseState) {
	l.mu.Lock()
	l.lease = lease
	l.mu.Unlock()
}

// set records a change reported by the lease and announces it.
func (l *Leadership) set(leader bool) {
	if !l.clustered {
		return
	}
	l.annMu.Lock()
	defer l.annMu.Unlock()
	l.mu.Lock()
	if l.leader == leader {
		l.mu.Unlock()
		return
	}
	l.leader, l.since = leader, l.now()
	close(l.changed)
	l.changed = make(chan struct{})
	subs := append([]func(bool){}, l.subs...)
	l.mu.Unlock()
	for _, fn := range subs {
		fn(leader)
	}
}

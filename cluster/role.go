package cluster

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

// Leadership is this instance's role, from the lease to the writer:
//   - HoldsLease: a single instance always; in cluster mode while it holds
//     an unexpired leader lease (the role is leader, else standby);
//   - IsWriter: the one predicate for "may write now" (schedule runs,
//     change findings, consume outcomes): a single instance always; in
//     cluster mode the lease holder once its Member caught up and captures.
//
// It announces each change of the lease. Its zero value is not usable:
// get one from NewLeadership.
type Leadership struct {
	clustered bool
	now       func() time.Time
	annMu     sync.Mutex // keeps announcements in order

	mu      sync.Mutex
	lease   leaseState  // nil until messaging starts (cluster mode)
	writer  func() bool // the Member's writer state (cluster mode)
	leader  bool        // last announced state
	since   time.Time   // when leader last changed (or the start)
	changed chan struct{}
	subs    []func(leader bool)
}

// NewLeadership is the role of a single instance (clustered false) or of
// a cluster member, which starts as a standby.
func NewLeadership(clustered bool, now func() time.Time) *Leadership {
	return &Leadership{clustered: clustered, now: now, leader: !clustered, since: now(), changed: make(chan struct{})}
}

// Clustered reports cluster mode (a cluster section).
func (l *Leadership) Clustered() bool { return l.clustered }

// HoldsLease reports whether this instance leads: always for a single
// instance; in cluster mode while it holds an unexpired lease. Holding the
// lease is not yet writing: see IsWriter.
func (l *Leadership) HoldsLease() bool {
	if !l.clustered {
		return true
	}
	l.mu.Lock()
	lease := l.lease
	l.mu.Unlock()
	return lease != nil && lease.IsLeader()
}

// IsWriter reports whether this instance may write now: always for a
// single instance; in cluster mode only the lease holder whose database
// caught up with the state stream and captures its changes.
func (l *Leadership) IsWriter() bool {
	if !l.clustered {
		return true
	}
	l.mu.Lock()
	writer := l.writer
	l.mu.Unlock()
	return writer != nil && writer()
}

// Role is single, leader or standby, as of now.
func (l *Leadership) Role() Role {
	switch {
	case !l.clustered:
		return RoleSingle
	case l.HoldsLease():
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
// HoldsLease after it closes and ask again for the one after.
func (l *Leadership) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// Await waits until this instance holds the lease, ctx ends or within
// has passed, and reports whether it holds it.
func (l *Leadership) Await(ctx context.Context, within time.Duration) bool {
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		ch := l.Changed()
		if l.HoldsLease() {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		case <-timer.C:
			return l.HoldsLease()
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

// Attach hands the started lease to leadership (cluster mode).
func (l *Leadership) Attach(lease leaseState) {
	l.mu.Lock()
	l.lease = lease
	l.mu.Unlock()
}

// attachWriter hands the Member's writer state to leadership.
func (l *Leadership) attachWriter(writer func() bool) {
	l.mu.Lock()
	l.writer = writer
	l.mu.Unlock()
}

// LeaseChanged records a change reported by the lease (its OnChange) and
// announces it.
func (l *Leadership) LeaseChanged(leader bool) {
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

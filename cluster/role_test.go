package cluster

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type fakeLease struct{ leader atomic.Bool }

func (f *fakeLease) IsLeader() bool { return f.leader.Load() }

func TestLeadershipSingleIsAlwaysLeader(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	l := NewLeadership(false, func() time.Time { return at })
	l.LeaseChanged(false) // a single instance ignores any lease news
	got := [...]any{l.Clustered(), l.HoldsLease(), l.Role(), l.Since()}
	want := [...]any{false, true, RoleSingle, at}
	if got != want {
		t.Fatalf("single = %v, want %v", got, want)
	}
}

func TestLeadershipClusteredFollowsLeaseAndAnnounces(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	l := NewLeadership(true, clock)
	if l.HoldsLease() || l.Role() != RoleStandby {
		t.Fatalf("before a lease: leader %v role %s, want standby", l.HoldsLease(), l.Role())
	}
	var seen []bool
	l.OnChange(func(leader bool) { seen = append(seen, leader) })
	fl := &fakeLease{}
	l.Attach(fl)
	ch := l.Changed()
	fl.leader.Store(true)
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	l.LeaseChanged(true)
	select {
	case <-ch:
	default:
		t.Fatal("Changed not closed on acquiring")
	}
	l.LeaseChanged(true) // no change: no announcement
	if got, want := [...]any{l.HoldsLease(), l.Role(), l.Since()}, [...]any{true, RoleLeader, now}; got != want {
		t.Fatalf("leader = %v, want %v", got, want)
	}
	ch = l.Changed()
	fl.leader.Store(false)
	l.LeaseChanged(false)
	<-ch
	if l.Role() != RoleStandby {
		t.Fatalf("role %s after losing, want standby", l.Role())
	}
	if !slices.Equal(seen, []bool{true, false}) {
		t.Fatalf("announced %v, want [true false]", seen)
	}
}

package agent

import (
	"sort"
	"time"
)

// RecoveryTTL is how long a pending recovery (the hint kept for a blocked
// tool) lives before it is dropped.
const RecoveryTTL = 10 * time.Minute

// PendingRecovery remembers that a tool was blocked and what would unblock
// it; a later success of the same tool clears it.
type PendingRecovery struct {
	Tool      string    `json:"tool"`
	Reason    string    `json:"reason"`
	BlockedAt time.Time `json:"blocked_at"`
}

// RecordBlock keeps a pending recovery for the blocked tool, stamped now.
func (f *FSM) RecordBlock(err *FSMBlockedError, now time.Time) {
	if err == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lazyInit()
	f.expire(now)
	f.pending[err.Tool] = PendingRecovery{Tool: err.Tool, Reason: err.Reason, BlockedAt: now}
}

// PendingRecoveries returns the unexpired pending recoveries, by tool name.
func (f *FSM) PendingRecoveries(now time.Time) []PendingRecovery {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lazyInit()
	f.expire(now)
	return f.pendingSorted()
}

func (f *FSM) pendingSorted() []PendingRecovery {
	out := make([]PendingRecovery, 0, len(f.pending))
	for _, p := range f.pending {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tool < out[j].Tool })
	return out
}

func (f *FSM) expire(now time.Time) {
	for tool, p := range f.pending {
		if now.Sub(p.BlockedAt) >= RecoveryTTL {
			delete(f.pending, tool)
		}
	}
}

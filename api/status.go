package api

import (
	"context"
	"time"

	"github.com/patrold/patrold/agent"
)

// Status is served at GET /api/v1/status: what the daemon is doing.
type Status struct {
	Version       string     `json:"version"`
	StartedAt     time.Time  `json:"started_at"`
	CurrentRunID  string     `json:"current_run_id,omitempty"`
	LastRunID     string     `json:"last_run_id,omitempty"`
	LastRunStatus string     `json:"last_run_status,omitempty"`
	LastRunAt     *time.Time `json:"last_run_finished_at,omitempty"`
	Leader        bool       `json:"scheduler_leader"`
	// Role is single (no cluster section: always the writer), leader or
	// standby (cluster mode); Instance the stable instance name (cluster
	// mode); LeaderSince when leadership last changed (cluster mode).
	Role        string     `json:"role"`
	Instance    string     `json:"instance,omitempty"`
	LeaderSince *time.Time `json:"leader_since,omitempty"`
	// LastSuccessAt is when the last run that did not end in error
	// finished.
	LastSuccessAt *time.Time `json:"last_success_at,omitempty"`
	// Replica is the database's position on the state stream (cluster
	// mode only): the writer flag, the sequence applied, the stream's last.
	Replica       *ReplicaStatus `json:"replica,omitempty"`
	NATSURL       string         `json:"nats_url"`
	OutboxPending int64          `json:"outbox_pending"`
	ActiveCount   int            `json:"active_findings"`
	Source        string         `json:"source"`
	Schedule      string         `json:"schedule"`
	Autonomy      string         `json:"autonomy"`
	// Ready is what /readyz answers; Unready lists each condition that
	// makes the instance unready (none when ready).
	Ready   bool           `json:"ready"`
	Unready []ReadyProblem `json:"unready"`
}

// ReadyProblem is one condition that makes an instance unready: which
// (store_file, store, integrity, run_store, replica_gap, replica_diverged,
// replica_apply, replica_stall)
// and what was seen.
type ReadyProblem struct {
	Condition string `json:"condition"`
	Detail    string `json:"detail"`
}

// ReplicaStatus is a clustered instance's replica position.
type ReplicaStatus struct {
	Writer     bool       `json:"writer"`      // leading and caught up: schedules, writes, consumes outcomes
	AppliedSeq uint64     `json:"applied_seq"` // stream sequence of the last state change applied
	LastSeq    uint64     `json:"last_seq"`    // stream sequence of the last state change published
	Behind     bool       `json:"behind"`      // applied_seq < last_seq
	AppliedAt  *time.Time `json:"applied_at,omitempty"`
	Epoch      uint64     `json:"epoch"`         // the highest writer epoch applied
	Fenced     uint64     `json:"fenced"`        // changes ignored as a deposed writer's
	Gap        string     `json:"gap,omitempty"` // changes missing from the stream: re-seed
	// Diverged: the database holds changes the stream never got; it is
	// being re-seeded and serves no reads meanwhile.
	Diverged string `json:"diverged,omitempty"`
	// ApplyError: the last state change could not be applied (a full
	// disk, a read-only file); it is retried.
	ApplyError string `json:"apply_error,omitempty"`
}

// Capabilities is the manifest served at GET /api/v1/agent/capabilities:
// the tools of every profile with their kinds and write targets, the agent
// runtime's declared error codes and limits, and the API's error codes.
type Capabilities struct {
	Profiles []agent.Capabilities `json:"profiles"`
	Codes    []agent.CodeInfo     `json:"codes"`
	APICodes []CodeInfo           `json:"api_codes"`
}

// NewCapabilities is the manifest of the given profiles, in order.
func NewCapabilities(profiles ...agent.Capabilities) Capabilities {
	return Capabilities{Profiles: profiles, Codes: agent.Codes(), APICodes: Codes()}
}

// Readiness is the body of a 200 from GET /readyz: "ready", with the
// instance's role and last successful run when the daemon tells them.
type Readiness struct {
	Status        string     `json:"status"`
	Role          string     `json:"role,omitempty"`
	Leader        *bool      `json:"leader,omitempty"`
	LastSuccessAt *time.Time `json:"last_success_at,omitempty"`
}

// ReadyDetailer is implemented by a Daemon that tells /readyz its role,
// leadership and last successful run.
type ReadyDetailer interface {
	ReadyDetail(ctx context.Context) Readiness
}

package api

import (
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
	NATSURL       string     `json:"nats_url"`
	OutboxPending int64      `json:"outbox_pending"`
	ActiveCount   int        `json:"active_findings"`
	Source        string     `json:"source"`
	Schedule      string     `json:"schedule"`
	Autonomy      string     `json:"autonomy"`
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

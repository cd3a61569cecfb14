// Package jsonref is the reference the snapshot decoder is held to: a
// plain encoding/json (v1) Unmarshal into structs that mirror
// snapshot.Snapshot and snapshot.Resource, with the metrics a map (the
// type v1 decodes natively) and no validation at all. The in-process
// benchmark (patrol's BenchmarkUnmarshalV1) and the process-level one
// (internal/procbench) both decode into these. Only tests import it.
package jsonref

import (
	"time"

	"github.com/patrold/patrold/snapshot"
)

// Snapshot is snapshot.Snapshot as a plain struct.
type Snapshot struct {
	Version   int        `json:"version"`
	TakenAt   time.Time  `json:"taken_at"`
	Source    string     `json:"source,omitempty"`
	Resources []Resource `json:"resources"`
}

// Resource is snapshot.Resource as a plain struct.
type Resource struct {
	ID        string             `json:"id"`
	Kind      snapshot.Kind      `json:"kind"`
	Name      string             `json:"name,omitempty"`
	Parent    string             `json:"parent,omitempty"`
	Parents   []string           `json:"parents,omitempty"`
	Status    string             `json:"status,omitempty"`
	Tags      []string           `json:"tags,omitempty"`
	Labels    map[string]string  `json:"labels,omitempty"`
	Metrics   map[string]float64 `json:"metrics,omitempty"`
	Addresses []string           `json:"addresses,omitempty"`
	Reachable *bool              `json:"reachable,omitempty"`
	Backup    *snapshot.Backup   `json:"backup,omitempty"`
	Smart     *snapshot.Smart    `json:"smart,omitempty"`
	ZFS       *snapshot.ZFS      `json:"zfs,omitempty"`

	BackupStore *snapshot.BackupStore `json:"backup_store,omitempty"`
	Notes       string                `json:"notes,omitempty"`
	Logs        []string              `json:"logs,omitempty"`
}

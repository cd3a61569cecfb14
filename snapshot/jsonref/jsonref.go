// Package jsonref is the reference the snapshot decoder is held to: a
// plain encoding/json (v1) Unmarshal into typed structs, with the metrics
// a map (the type v1 decodes natively) and no validation at all. The
// in-process benchmark (patrol's BenchmarkUnmarshalV1) and the
// process-level one (internal/procbench) both decode into these. Only
// tests import it.
//
// The structs embed snapshot's, so a new snapshot field is decoded here
// without a change (docs/SOURCES.md, "Adding a field").
package jsonref

import "github.com/patrold/patrold/snapshot"

// Snapshot is snapshot.Snapshot with plain resources.
type Snapshot struct {
	snapshot.Snapshot
	Resources []Resource `json:"resources"`
}

// Resource is snapshot.Resource with its metrics a map.
type Resource struct {
	snapshot.Resource
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

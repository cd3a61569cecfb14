package patrol

import (
	"context"
	"encoding/json"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// Analyst is the model side of a run: the agentic detection loop, the
// evaluation pass over signals the model did not file, and the assessment
// sweep of previously active findings (ARCHITECTURE steps 6, 7, 10, 12).
// nil means deterministic only.
type Analyst interface {
	Analyze(ctx context.Context, in AnalysisInput) (*Analysis, error)
}

// AnalysisInput is what a run hands the analyst.
type AnalysisInput struct {
	RunID    string
	Now      time.Time
	Snapshot *snapshot.Snapshot
	// Signals is the authoritative deterministic detection over the whole
	// snapshot (already computed, with hysteresis).
	Signals []signals.Signal
	// Held are the signals a deterministic parent of this run explains
	// (an operation window, an offline node, lost quorum): the daemon
	// files them held, so the evaluation pass does not offer them.
	Held map[signals.Key]bool
	// Active are the findings active before this run, whole.
	Active []findings.Finding
	// Thresholds resolves the effective thresholds per resource.
	Thresholds signals.Thresholds
}

// Analysis is what the model stages produced. Everything in it came from
// tool calls; nothing is parsed from prose.
type Analysis struct {
	// Observations are findings the model filed (report_finding) that
	// passed grounding, with Source model.
	Observations []findings.Observation
	// Filed lists every finding created, re-reported, merged into or
	// assessed present during this run: the matching input.
	Filed []signals.Filed
	// Resolve maps finding ids to a resolution reason: model "resolved"
	// verdicts the deterministic check confirmed.
	Resolve map[string]string
	// Uncertain counts "uncertain" verdicts; a run with any is never
	// healthy.
	Uncertain int
	// Capped counts model reports refused by the model-finding caps.
	Capped int
	// Reasons are status reasons (budget_exhausted, model_failed).
	Reasons []string
	// Errors are human-readable problems of the model stages.
	Errors []string
	Usage  Usage
	// Exchange is the recorded model exchange (JSON), stored with the run
	// so it can be replayed.
	Exchange json.RawMessage
}

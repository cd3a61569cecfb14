package patrol

import (
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/probe"
)

// Trigger says what started a run.
type Trigger string

// Triggers.
const (
	TriggerManual    Trigger = "manual"
	TriggerScheduled Trigger = "scheduled"
	TriggerStartup   Trigger = "startup"
	TriggerAPI       Trigger = "api"
	// TriggerAlert: an outside monitor's alert asked for a scoped run
	// (Triggers).
	TriggerAlert Trigger = "alert"
)

// Run statuses, in precedence order.
const (
	StatusError       = "error"
	StatusDegraded    = "degraded"
	StatusCritical    = "critical"
	StatusIssuesFound = "issues_found"
	StatusHealthy     = "healthy"
	StatusRunning     = "running"
)

// Status reasons.
const (
	ReasonInvalidResources = "invalid_resources"
	ReasonEmptyScope       = "empty_scope"
	ReasonCollectFailed    = "collect_failed"
	ReasonBudgetExhausted  = "budget_exhausted"
	ReasonModelFailed      = "model_failed"
	ReasonPartialSource    = "partial_source"
	ReasonSourceFailed     = "source_failed"
	ReasonProbeFailed      = "probe_failed"
	ReasonHistoryFailed    = "history_failed"
	ReasonInterrupted      = "interrupted"
	ReasonCommitFailed     = "commit_failed"
	ReasonTimeout          = "run_timeout"
	ReasonCanceled         = "canceled"
)

// Analysis modes.
const (
	AnalysisModel         = "model"
	AnalysisDeterministic = "deterministic"
)

// Report is the run report (docs/PATROL_ARCHITECTURE.md).
type Report struct {
	RunID   string  `json:"run_id"`
	Trigger Trigger `json:"trigger"`
	// Scope is set for a scoped run.
	Scope            *Scope             `json:"scope,omitempty"`
	Status           string             `json:"status"`
	StatusReasons    []string           `json:"status_reasons"`
	Analysis         string             `json:"analysis"`
	StartedAt        time.Time          `json:"started_at"`
	FinishedAt       time.Time          `json:"finished_at"`
	DurationMS       int64              `json:"duration_ms"`
	Resources        map[string]int     `json:"resources"`
	InvalidResources []snapshot.Problem `json:"invalid_resources"`
	Signals          []signals.Signal   `json:"signals"`
	UnmatchedSignals []SignalRef        `json:"unmatched_signals"`
	Findings         []FindingRef       `json:"findings"`
	Resolved         []string           `json:"resolved"`
	Usage            Usage              `json:"usage"`
	Errors           []string           `json:"errors"`
	// Uncertain counts "uncertain" model verdicts (never healthy with any).
	Uncertain int `json:"uncertain,omitempty"`
	// Warnings are the source's warnings (a kept copy used because its
	// read failed, a read skipped), the first MaxReportWarnings of them;
	// WarningsDropped counts the rest. They change no status.
	Warnings        []snapshot.Problem `json:"warnings,omitempty"`
	WarningsDropped int                `json:"warnings_dropped,omitempty"`
	// CoverageGaps counts the checks the source could not evaluate
	// (coverage_gap findings); never healthy with any.
	CoverageGaps int `json:"coverage_gaps,omitempty"`
	// Model names the model of a model-analysed run.
	Model *ModelRef `json:"model,omitempty"`
	// ModelFindingsCapped counts model reports refused by the
	// patrol.model_findings caps.
	ModelFindingsCapped int `json:"model_findings_capped,omitempty"`
	exchange            []byte
	partial             bool // a source of several failed: the run record is not complete
	inhibited           int  // active findings of this run held by an active parent finding
	// Probe summarises the reachability probes of this run.
	Probe *probe.Result `json:"probe,omitempty"`
	// HandedOver lists findings handed to remediation after this run.
	HandedOver []string `json:"handed_over,omitempty"`
	Source     string   `json:"source,omitempty"`
	// SourceRequests counts the API requests the source sent to collect
	// (docs/PERFORMANCE.md#proxmox-requests); 0 for a source that counts
	// none.
	SourceRequests int        `json:"source_requests,omitempty"`
	TakenAt        *time.Time `json:"taken_at,omitempty"`
}

// MaxReportWarnings bounds Report.Warnings: a source that warns about
// every guest must not make the report as large as the fleet.
const MaxReportWarnings = 100

// ModelRef names a model: the provider and the configured model name.
type ModelRef struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
}

// SignalRef names a signal.
type SignalRef struct {
	Type       signals.Type `json:"type"`
	ResourceID string       `json:"resource_id"`
}

// FindingRef is one finding in the report.
type FindingRef struct {
	ID         string              `json:"id"`
	Key        string              `json:"key"`
	ResourceID string              `json:"resource_id"`
	Category   findings.Category   `json:"category"`
	Severity   findings.Severity   `json:"severity"`
	State      string              `json:"state"`
	Source     findings.Source     `json:"source"`
	Change     findings.ChangeKind `json:"change"`
	Title      string              `json:"title,omitempty"`
	// InhibitedBy is the id of the parent finding of this run that holds
	// it (docs/FINDINGS.md#inhibition); "" when none does.
	InhibitedBy string `json:"inhibited_by,omitempty"`
}

// Usage is the model usage of a run.
type Usage struct {
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	Turns        int     `json:"turns"`
}

func newReport(id string, trigger Trigger, started time.Time) *Report {
	return &Report{
		RunID: id, Trigger: trigger, StartedAt: started, Analysis: AnalysisDeterministic,
		StatusReasons: []string{}, Resources: map[string]int{}, InvalidResources: []snapshot.Problem{},
		Signals: []signals.Signal{}, UnmatchedSignals: []SignalRef{}, Findings: []FindingRef{},
		Resolved: []string{}, Errors: []string{},
	}
}

func (r *Report) addReason(reason string) {
	for _, x := range r.StatusReasons {
		if x == reason {
			return
		}
	}
	r.StatusReasons = append(r.StatusReasons, reason)
}

// finalStatus applies the precedence error > degraded > critical >
// issues_found > healthy. worst is the highest severity rank of the
// active, not-quiet findings after the run (0 when none).
func (r *Report) finalStatus(failed bool, worst int) string {
	switch {
	case failed:
		return StatusError
	case len(r.StatusReasons) > 0 || len(r.InvalidResources) > 0:
		return StatusDegraded
	}
	switch {
	case worst >= findings.SeverityCritical.Rank():
		return StatusCritical
	//mutate:gap-never-healthy ./patrol ^TestCoverageGapNeverHealthy$
	case worst >= findings.SeverityWarning.Rank() || r.Uncertain > 0 || r.CoverageGaps > 0:
		return StatusIssuesFound
	}
	return StatusHealthy
}

package analyst

import (
	"math"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// maxLogLines bounds the log lines a resource view carries (the newest).
const maxLogLines = 20

// resourceView is a resource as the model sees it: the snapshot fields,
// the effective thresholds that apply to it and the backup age, so the
// figures a report may quote are in a tool result.
type resourceView struct {
	snapshot.Resource
	Thresholds     map[string]alerts.Threshold `json:"thresholds,omitempty"`
	BackupMaxAgeH  float64                     `json:"backup_max_age_hours,omitempty"`
	BackupAgeHours *float64                    `json:"hours_since_last_backup_success,omitempty"`
}

func viewResource(r *snapshot.Resource, th alerts.Thresholds, takenAt time.Time) resourceView {
	v := resourceView{Resource: *r}
	if n := len(r.Logs); n > maxLogLines {
		v.Logs = r.Logs[n-maxLogLines:]
	}
	switch {
	case r.Kind == snapshot.KindNode:
		v.Thresholds = map[string]alerts.Threshold{"cpu": th.CPU, "memory": th.Memory}
	case r.Kind.Guest():
		v.Thresholds = map[string]alerts.Threshold{"cpu": th.CPU, "memory": th.Memory, "disk": th.Disk}
	case r.Kind == snapshot.KindStorage:
		v.Thresholds = map[string]alerts.Threshold{"usage": th.Disk}
	}
	if r.Kind.Guest() && r.Backup != nil {
		v.BackupMaxAgeH = th.BackupMaxAge.Hours()
		if s := r.Backup.LastSuccessAt; s != nil && !takenAt.IsZero() {
			h := math.Round(takenAt.Sub(*s).Hours()*10) / 10
			v.BackupAgeHours = &h
		}
	}
	return v
}

// resourceSummary is one row of list_resources.
type resourceSummary struct {
	ID      string           `json:"id"`
	Kind    snapshot.Kind    `json:"kind"`
	Name    string           `json:"name,omitempty"`
	Status  string           `json:"status,omitempty"`
	Parent  string           `json:"parent,omitempty"`
	Tags    []string         `json:"tags,omitempty"`
	Metrics snapshot.Metrics `json:"metrics,omitempty"`
}

func summarise(r *snapshot.Resource) resourceSummary {
	return resourceSummary{ID: r.ID, Kind: r.Kind, Name: r.Name, Status: r.Status, Parent: r.Parent, Tags: r.Tags, Metrics: r.Metrics}
}

// findingView is an open finding as the model sees it.
type findingView struct {
	ID          string            `json:"id"`
	Key         string            `json:"key"`
	ResourceID  string            `json:"resource_id"`
	Category    findings.Category `json:"category"`
	Severity    findings.Severity `json:"severity"`
	Source      findings.Source   `json:"source"`
	Title       string            `json:"title"`
	Evidence    string            `json:"evidence,omitempty"`
	DetectedAt  time.Time         `json:"detected_at"`
	LastSeenAt  time.Time         `json:"last_seen_at"`
	TimesRaised int               `json:"times_raised"`
}

func viewFinding(f *findings.Finding) findingView {
	return findingView{ID: f.ID, Key: f.Key, ResourceID: f.ResourceID, Category: f.Category, Severity: f.Severity,
		Source: f.Source, Title: f.Title, Evidence: f.Evidence, DetectedAt: f.DetectedAt, LastSeenAt: f.LastSeenAt, TimesRaised: f.TimesRaised}
}

// flagView is one triage flag of a resource in the seed context.
type flagView struct {
	Signal    signals.Type `json:"signal,omitempty"`
	Watch     signals.Type `json:"watch,omitempty"`
	Severity  string       `json:"severity,omitempty"`
	Category  string       `json:"category,omitempty"`
	Metric    string       `json:"metric,omitempty"`
	Value     float64      `json:"value"`
	Threshold float64      `json:"threshold"`
}

// signalView is one unmatched signal in the evaluation pass.
type signalView struct {
	Type       signals.Type `json:"type"`
	ResourceID string       `json:"resource_id"`
	Category   string       `json:"category"`
	Severity   string       `json:"severity"`
	Value      float64      `json:"value"`
	Threshold  float64      `json:"threshold"`
	Summary    string       `json:"summary"`
}

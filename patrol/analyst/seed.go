package analyst

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// seedPart is one fenced data part of an opening message.
type seedPart struct {
	kind  prompt.Kind
	label string
	text  string
}

// tokenBudget hands out the seed's tokens in priority order.
type tokenBudget struct{ left int }

func (b *tokenBudget) take(text string) bool {
	n := countingTokens(text)
	if n > b.left {
		return false
	}
	b.left -= n
	return true
}

// seedTokens is the seed budget left after the policy and the tool
// definitions every request carries.
func (r *run) seedTokens(profile string) int {
	fixed := model.EstimateTokens(model.Request{System: Policy + prompt.FenceNotice, Tools: r.reg.ToolDefs(Profiles()[profile])})
	return SeedBudget(r.a.opts.ContextWindow, r.a.opts.MaxOutputTokens) - fixed
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%q", err.Error())
	}
	return string(b)
}

// detectionSeed composes the opening of the detection loop: flagged
// resources first, then a fleet summary, then the findings already open,
// each as long as the token budget lasts. It returns how many flagged
// resources were left out.
func (r *run) detectionSeed(cv *prompt.Conversation, tri *Triage) int {
	snap := r.in.Snapshot
	intro := fmt.Sprintf(detectionIntro, snap.TakenAt.UTC().Format(time.RFC3339), len(snap.Resources),
		len(tri.Flagged), len(tri.Signals), len(tri.Watches))
	b := &tokenBudget{left: r.seedTokens(StageDetection)}
	b.take(intro)
	b.take(detectionTask)
	b.take(fmt.Sprintf(detectionOmitted, len(tri.Flagged)))

	flags := flagsByResource(tri)
	var parts []seedPart
	omitted := 0
	for i, id := range tri.Flagged {
		res := r.byID[id]
		text := jsonText(struct {
			Resource resourceView `json:"resource"`
			Flags    []flagView   `json:"flags"`
		}{viewResource(res, r.in.Thresholds.Resolve(res), snap.TakenAt), flags[id]})
		if !b.take(text) {
			omitted = len(tri.Flagged) - i
			break
		}
		parts = append(parts, seedPart{prompt.KindSnapshot, "flagged resource " + res.ID, text})
	}
	if text := jsonText(fleetSummary(snap)); b.take(text) {
		parts = append(parts, seedPart{prompt.KindSnapshot, "fleet summary", text})
	}
	var open []findingView
	for _, id := range r.activeOrder {
		v := viewFinding(r.active[id])
		if !b.take(jsonText(v)) {
			break
		}
		open = append(open, v)
	}
	if len(r.activeOrder) > 0 {
		parts = append(parts, seedPart{prompt.KindHistory, fmt.Sprintf("open findings (%d of %d)", len(open), len(r.activeOrder)), jsonText(open)})
	}

	cv.Instruct(intro)
	for _, p := range parts {
		cv.Data(p.kind, p.label, p.text)
	}
	if omitted > 0 {
		cv.Instruct(fmt.Sprintf(detectionOmitted, omitted))
	}
	cv.Instruct(detectionTask)
	return omitted
}

func flagsByResource(tri *Triage) map[string][]flagView {
	out := map[string][]flagView{}
	for _, s := range tri.Signals {
		id := snapshot.CanonicalID(s.ResourceID)
		out[id] = append(out[id], flagView{Signal: s.Type, Severity: s.Severity, Category: s.Category, Value: s.Value, Threshold: s.Threshold})
	}
	for _, w := range tri.Watches {
		id := snapshot.CanonicalID(w.ResourceID)
		out[id] = append(out[id], flagView{Watch: w.Type, Metric: w.Metric, Value: w.Value, Threshold: w.Trigger})
	}
	return out
}

// fleetSummary counts resources by kind and status.
func fleetSummary(snap *snapshot.Snapshot) map[string]map[string]int {
	out := map[string]map[string]int{}
	for i := range snap.Resources {
		r := &snap.Resources[i]
		status := r.Status
		if status == "" {
			status = "unspecified"
		}
		if out[string(r.Kind)] == nil {
			out[string(r.Kind)] = map[string]int{}
		}
		out[string(r.Kind)][status]++
	}
	return out
}

// evaluationSeed composes the evaluation pass: the unmatched signals, as
// many as the budget holds (the rest are still in scope; whatever the
// model does not file is filed deterministically).
func (r *run) evaluationSeed(cv *prompt.Conversation, unmatched []signals.Signal) {
	b := &tokenBudget{left: r.seedTokens(StageEvaluation)}
	b.take(evaluationIntro)
	var views []signalView
	for _, s := range unmatched {
		v := signalView{Type: s.Type, ResourceID: s.ResourceID, Category: s.Category, Severity: s.Severity,
			Value: s.Value, Threshold: s.Threshold, Summary: s.Summary}
		if !b.take(jsonText(v)) {
			break
		}
		views = append(views, v)
	}
	cv.Instruct(evaluationIntro)
	cv.Data(prompt.KindSnapshot, fmt.Sprintf("unmatched signals (%d of %d)", len(views), len(unmatched)), jsonText(views))
}

// sweepSeed composes the assessment sweep: the findings without a
// verdict, as many as the budget holds.
func (r *run) sweepSeed(cv *prompt.Conversation, ids []string) {
	b := &tokenBudget{left: r.seedTokens(StageAssessment)}
	b.take(sweepIntro)
	var views []findingView
	for _, id := range ids {
		v := viewFinding(r.active[id])
		if !b.take(jsonText(v)) {
			break
		}
		views = append(views, v)
	}
	cv.Instruct(sweepIntro)
	cv.Data(prompt.KindHistory, fmt.Sprintf("findings awaiting a verdict (%d of %d)", len(views), len(ids)), jsonText(views))
}

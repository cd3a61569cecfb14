package analyst

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// maxScopeListed bounds the in-scope pairs listed in an out_of_scope refusal.
const maxScopeListed = 20

// reportResult is what report_finding returns.
type reportResult struct {
	FindingID string `json:"finding_id"`
	Status    string `json:"status"` // filed | updated | re_reported
}

// reportFinding files a model finding after the checks, in order: schema
// (done by the runtime), strict decoding and field limits, resource exists,
// disclosure guard, grounding, evaluation scope.
func (r *run) reportFinding(_ context.Context, raw json.RawMessage) (any, error) {
	args, err := DecodeReport(raw)
	if err != nil {
		r.a.metrics.report(reportInvalid)
		return nil, err
	}
	res := r.byID[snapshot.CanonicalID(args.ResourceID)]
	if res == nil {
		r.a.metrics.report(reportNotFound)
		return nil, notFound("resource_id", "no resource %q in this snapshot", args.ResourceID)
	}
	if field := r.discloses(args.Title, args.Description, args.Recommendation, args.Evidence); field != "" {
		r.a.metrics.report(ReasonDisclosure)
		return nil, refused(ReasonDisclosure, "the report repeats the system policy and was not filed")
	}
	if err := r.ground(res.ID, args.Title, args.Description, args.Evidence); err != nil {
		r.a.metrics.report(ReasonUnsupportedClaim)
		return nil, err
	}
	// What is stored and published is patrold's text now: neutralised and
	// capped like every name it writes.
	o := findings.Observation{
		Key: findings.NormalizeKey(args.Key), ResourceID: res.ID, ResourceKind: string(res.Kind), ResourceName: prompt.Name(res.Name),
		ResourceTags: prompt.Names(res.Tags), Category: findings.NormalizeCategory(args.Category), Severity: findings.Severity(args.Severity),
		Source: findings.SourceModel, Title: prompt.SafeText(args.Title, MaxTitleChars), Description: prompt.SafeText(args.Description, MaxTextChars),
		Recommendation: prompt.SafeText(args.Recommendation, MaxTextChars), Evidence: prompt.SafeText(args.Evidence, MaxTextChars),
	}
	id := findings.ID(o.ResourceID, o.Category, o.Key)
	key := scopeKey{snapshot.CanonicalID(res.ID), string(o.Category)}

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.scope != nil {
		if !r.scope[key] {
			r.a.metrics.report(ReasonOutOfScope)
			return nil, refused(ReasonOutOfScope, "this pass only takes reports for the unmatched conditions listed: %s",
				strings.Join(r.scopeList(), "; ")).With("resource_id", res.ID).With("category", string(o.Category))
		}
		if r.scopeUsed[key] {
			r.a.metrics.report(ReasonAlreadyReported)
			return nil, refused(ReasonAlreadyReported, "a report for %s (%s) was already filed in this pass", res.ID, o.Category)
		}
		r.scopeUsed[key] = true
	}
	status := "filed"
	if _, ok := r.obs[id]; ok {
		status = "updated"
	} else if _, ok := r.active[id]; ok {
		status = "re_reported"
	}
	r.obs[id] = o
	r.filed = append(r.filed, signals.Filed{ResourceID: res.ID, Category: string(o.Category), Severity: string(o.Severity)})
	r.a.metrics.report(reportFiled)
	return reportResult{FindingID: id, Status: status}, nil
}

func (r *run) scopeList() []string {
	out := make([]string, 0, len(r.scope))
	for k := range r.scope {
		out = append(out, k.id+" ("+k.category+")")
	}
	sort.Strings(out)
	if len(out) > maxScopeListed {
		out = append(out[:maxScopeListed], fmt.Sprintf("and %d more", len(out)-maxScopeListed))
	}
	return out
}

// ground checks a claim about one resource field by field: the
// resource must have been read in this run, and every figure and resource
// id in the texts must appear in a tool result about that resource.
func (r *run) ground(resourceID string, texts ...string) *agent.ToolError {
	if !r.facts.read(resourceID) {
		return refused(ReasonUnsupportedClaim,
			"no tool result of this run showed %s; read it with %s before reporting on it", canonical(resourceID), ToolGetResource).
			With("unsupported", []string{canonical(resourceID)})
	}
	if bad := r.facts.unsupported(resourceID, texts...); len(bad) > 0 {
		return refused(ReasonUnsupportedClaim,
			"the text names figures or resource ids that no tool result about %s showed in this run: %s; read them with a tool first",
			canonical(resourceID), strings.Join(bad, ", ")).With("unsupported", bad)
	}
	return nil
}

// discloses returns the first text that repeats the system policy, or "".
func (r *run) discloses(texts ...string) string {
	for _, t := range texts {
		if t != "" && !r.a.composer.Guard().Check(t) {
			return t
		}
	}
	return ""
}

// assessResult is what assess_finding returns.
type assessResult struct {
	FindingID  string `json:"finding_id"`
	Verdict    string `json:"verdict"`
	Resolution string `json:"resolution,omitempty"` // confirmed | not_confirmed
	Reason     string `json:"reason,omitempty"`
}

// assessFinding records a verdict on a finding that was active before the
// run. present re-confirms it (it matches signals and is observed again),
// uncertain is counted, resolved holds only when the deterministic check
// for its key agrees (fail closed).
func (r *run) assessFinding(_ context.Context, raw json.RawMessage) (any, error) {
	args, err := DecodeAssess(raw)
	if err != nil {
		return nil, err
	}
	f := r.active[strings.TrimSpace(args.FindingID)]
	if f == nil {
		return nil, notFound("finding_id", "no open finding %q; list_findings shows them", args.FindingID)
	}
	if args.Verdict == VerdictPresent && r.byID[canonical(f.ResourceID)] == nil {
		return nil, notFound("finding_id", "the resource %s of finding %s is not in this snapshot, so it cannot be present", f.ResourceID, f.ID)
	}
	if r.discloses(args.Evidence) != "" {
		return nil, refused(ReasonDisclosure, "the verdict repeats the system policy and was not recorded")
	}
	if err := r.ground(f.ResourceID, args.Evidence); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.covered(f.ID) {
		return nil, refused(ReasonAlreadyAssessed, "finding %s already has a verdict or was re-reported in this run", f.ID)
	}
	out := assessResult{FindingID: f.ID, Verdict: args.Verdict}
	r.verdicts[f.ID] = args.Verdict
	switch args.Verdict {
	case VerdictPresent:
		r.filed = append(r.filed, signals.Filed{ResourceID: f.ResourceID, Category: string(f.Category), Severity: string(f.Severity)})
		if _, ok := r.obs[f.ID]; !ok {
			r.obs[f.ID] = reconfirm(f, args.Evidence)
		}
		r.a.metrics.verdict(VerdictPresent, verdictAccepted)
	case VerdictUncertain:
		r.uncertain++
		r.a.metrics.verdict(VerdictUncertain, verdictAccepted)
	case VerdictResolved:
		if ok, why := r.confirmResolved(f); ok {
			r.resolve[f.ID] = findings.ResolveModelVerdict
			out.Resolution = "confirmed"
			r.a.metrics.verdict(VerdictResolved, verdictConfirmed)
		} else {
			out.Resolution, out.Reason = "not_confirmed", why
			r.a.metrics.verdict(VerdictResolved, verdictNotConfirmed)
		}
	}
	return out, nil
}

// reconfirm is the observation of a finding assessed present: its own
// identity and text, the model's evidence. Without it the run would not
// see the finding and reconciliation could resolve it.
func reconfirm(f *findings.Finding, evidence string) findings.Observation {
	return findings.Observation{
		Key: f.Key, ResourceID: f.ResourceID, ResourceKind: f.ResourceKind, ResourceName: f.ResourceName,
		ResourceTags: f.ResourceTags, Category: f.Category, Severity: f.Severity, Source: f.Source,
		Title: f.Title, Description: f.Description, Recommendation: f.Recommendation, Evidence: evidence,
	}
}

// confirmResolved is the deterministic check behind a resolved verdict:
// the key is a catalogue signal of the finding's category, its detector
// had the data it needs on the resource in this snapshot, and no signal
// of that type is present for it. Anything inconclusive fails closed.
func (r *run) confirmResolved(f *findings.Finding) (bool, string) {
	typ, ok := signals.Covering(f.Key, string(f.Category))
	if !ok {
		return false, "the key is not a catalogue signal of this category, so patrold cannot check it"
	}
	id := snapshot.CanonicalID(f.ResourceID)
	res := r.byID[id]
	if res == nil {
		return false, "the resource is not in this snapshot"
	}
	if !signals.Evaluated(res, typ) {
		return false, "the snapshot lacks the data to check this condition"
	}
	for i := range r.in.Signals {
		s := &r.in.Signals[i]
		if s.Type == typ && snapshot.CanonicalID(s.ResourceID) == id {
			return false, "deterministic detection still sees the condition"
		}
	}
	return true, ""
}

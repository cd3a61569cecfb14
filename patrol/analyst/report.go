package analyst

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model/ground"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// ReasonUnsupportedClaim is the details.reason of a report refused by
// grounding (agent code POLICY_BLOCKED).
const ReasonUnsupportedClaim = "unsupported_claim"

// maxScopeListed bounds the in-scope pairs listed in an out_of_scope refusal.
const maxScopeListed = 20

// reportResult is what report_finding returns.
type reportResult struct {
	FindingID string `json:"finding_id"`
	Status    string `json:"status"` // filed | updated | re_reported
}

// reportFinding files a model finding after the checks, in order: schema
// (done by the runtime), strict decoding and field limits, resource exists,
// the filing path (normalise, disclosure guard, grounding), severity
// agreement, evaluation scope, the model-finding caps.
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
	key := findings.NormalizeKey(args.Key)
	if err := judgedKind(res, key); err != nil {
		r.a.metrics.report(reportInvalid)
		return nil, err
	}
	texts, terr := r.file(res.ID, key,
		modelText{args.Title, MaxTitleChars}, modelText{args.Description, MaxTextChars},
		modelText{args.Recommendation, MaxTextChars}, modelText{args.Evidence, MaxTextChars})
	if terr != nil {
		r.a.metrics.report(terr.Details["reason"].(string))
		return nil, terr
	}
	sev := findings.Severity(args.Severity)
	// What is stored and published is exactly the text the checks saw.
	o := findings.Observation{
		Key: key, ResourceID: res.ID, ResourceKind: string(res.Kind), ResourceName: prompt.SafeName(res.Name),
		ResourceTags: prompt.SafeNames(res.Tags), Category: findings.NormalizeCategory(args.Category), Severity: sev,
		Source: findings.SourceModel, Title: texts[0], Description: texts[1], Recommendation: texts[2], Evidence: texts[3],
	}
	id := findings.ID(o.ResourceID, o.Category, o.Key)
	sk := scopeKey{snapshot.CanonicalID(res.ID), string(o.Category)}

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.scope != nil {
		if !r.scope[sk] {
			r.a.metrics.report(ReasonOutOfScope)
			return nil, refused(ReasonOutOfScope, "this pass only takes reports for the unmatched conditions listed: %s",
				strings.Join(r.scopeList(), "; ")).With("resource_id", res.ID).With("category", string(o.Category))
		}
		if r.scopeUsed[sk] {
			r.a.metrics.report(ReasonAlreadyReported)
			return nil, refused(ReasonAlreadyReported, "a report for %s (%s) was already filed in this pass", res.ID, o.Category)
		}
	}
	if err := r.agrees(res, key, sev); err != nil {
		r.a.metrics.report(ReasonUnsupportedClaim)
		return nil, err
	}
	if err := r.ownKeyCeiling(res, key, sev, texts); err != nil {
		r.a.metrics.report(ReasonUnsupportedClaim)
		return nil, err
	}
	_, again := r.obs[id]
	if !again {
		if err := r.capped(sk.id); err != nil {
			r.a.metrics.report(ReasonCapped)
			r.capRefused++
			return nil, err
		}
	}
	if r.scope != nil {
		r.scopeUsed[sk] = true
	}
	status := "filed"
	if again {
		status = "updated"
	} else if _, ok := r.active[id]; ok {
		status = "re_reported"
	}
	if !again {
		r.reported++
		r.perResource[sk.id]++
	}
	r.obs[id] = o
	r.filed = append(r.filed, signals.Filed{ResourceID: res.ID, Key: key, Category: string(o.Category), Severity: string(o.Severity)})
	r.a.metrics.report(reportFiled)
	return reportResult{FindingID: id, Status: status}, nil
}

// ReasonCapped is the details.reason of a report refused because the run
// or the resource already holds as many model findings as the caps allow.
const ReasonCapped = "model_findings_capped"

// capped refuses a new model finding over the caps (r.mu held).
func (r *run) capped(resourceID string) *agent.ToolError {
	perRun, perRes := r.a.opts.ModelFindings.limits()
	if r.reported >= perRun {
		return refused(ReasonCapped, "this run already holds %d model findings, the most patrol.model_findings.max_per_run allows; file only what matters most", perRun)
	}
	if r.perResource[resourceID] >= perRes {
		return refused(ReasonCapped, "%s already has %d model findings in this run, the most patrol.model_findings.max_per_resource allows", resourceID, perRes)
	}
	return nil
}

// agrees refuses a model finding under a catalogue key (a signal type or
// its alias) whose severity is above what detection gives for that
// resource in this run. That is the signal's severity, or nothing when
// detection evaluated the resource and found no signal.
func (r *run) agrees(res *snapshot.Resource, key string, sev findings.Severity) *agent.ToolError {
	typ, ok := signals.Lookup(key)
	if !ok {
		return nil
	}
	id := snapshot.CanonicalID(res.ID)
	for i := range r.in.Signals {
		s := &r.in.Signals[i]
		if s.Type != typ || snapshot.CanonicalID(s.ResourceID) != id {
			continue
		}
		//mutate:severity-below-signal ./cmd/patrold ^TestPatrolAttacks$
		if signals.SeverityRank(string(sev)) > signals.SeverityRank(s.Severity) {
			return refused(ReasonUnsupportedClaim, "detection gives %s %s on %s in this run (measured %s, threshold %s); a finding under this key may not be %s",
				typ, s.Severity, res.ID, figure(s.Value), figure(s.Threshold), sev).With("measured", s.Value).With("severity", s.Severity)
		}
		return nil
	}
	//mutate:severity-none-below-trigger:always ./cmd/patrold ^TestPatrolAttacks$
	if !signals.Evaluated(res, typ) {
		// Detection could not decide: the model's word stands, grounded,
		// up to the most its detector ever gives.
		if c := signals.Ceiling(typ); c != "" && signals.SeverityRank(string(sev)) > signals.SeverityRank(c) {
			return refused(ReasonUnsupportedClaim, "detection never gives %s above %s; a finding under this key may not be %s", typ, c, sev).With("severity", c)
		}
		return nil
	}
	d := refused(ReasonUnsupportedClaim, "detection evaluated %s for %s in this run and found no signal%s; a finding under this key needs the condition",
		res.ID, typ, measured(res, typ))
	if v, ok := measuredValue(res, typ); ok {
		d = d.With("measured", v)
	}
	return d
}

// judgedKind refuses a report under a catalogue key on a resource kind
// detection never judges that key on (high_disk on a node): the net
// could never check it, confirm it or resolve it. The code is
// INVALID_INPUT, naming the field key.
func judgedKind(res *snapshot.Resource, key string) *agent.ToolError {
	typ, ok := signals.Lookup(key)
	//mutate:catalogue-key-unjudged-kind ./patrol/analyst,./cmd/patrold ^TestJudgedKind|^TestProvenanceAttacks
	if ok && !signals.Judges(typ, res.Kind) {
		kinds := make([]string, 0, 4)
		for _, k := range signals.JudgedKinds(typ) {
			kinds = append(kinds, string(k))
		}
		return invalid("key", "detection judges %s only on %s, never on a %s like %s; report on the resource it concerns, or under a key of your own",
			typ, strings.Join(kinds, ", "), res.Kind, res.ID)
	}
	return nil
}

// ownKeyCeiling refuses a report under a key outside the catalogue above
// its ceiling: warning, and never above what detection gives in this run
// for a quantity the text names (watch when detection evaluated it and
// found no signal). The net files its own findings beside it.
func (r *run) ownKeyCeiling(res *snapshot.Resource, key string, sev findings.Severity, texts []prompt.Text) *agent.ToolError {
	if _, ok := signals.Lookup(key); ok {
		return nil // a catalogue key: agrees decides
	}
	ceiling, why := findings.SeverityWarning, "a finding under a key outside the catalogue is at most warning"
	for _, t := range texts {
		for _, fig := range ground.ExtractClaims(t.String(), "").Figures {
			typ, ok := familyType(res, fig)
			if !ok {
				continue
			}
			got, decided := r.detected(res, typ)
			if !decided {
				continue
			}
			c := findings.Severity(got)
			if got == "" {
				c = findings.SeverityWatch
			}
			if c.Rank() <= ceiling.Rank() {
				ceiling = c
				why = fmt.Sprintf("the text names %s, and detection gives %s on %s in this run%s", fig.Family, detectedWord(typ, got), res.ID, measured(res, typ))
			}
		}
	}
	//mutate:own-key-severity-cap ./cmd/patrold ^TestProvenanceAttacks
	if sev.Rank() > ceiling.Rank() {
		return refused(ReasonUnsupportedClaim, "%s; a finding under this key may be at most %s, not %s", why, ceiling, sev).With("severity", string(ceiling))
	}
	return nil
}

// familyType is the catalogue signal detection measures a figure's named
// quantity by on res, when it judges one there (memory: high_memory).
// A threshold, or a figure naming no quantity, has none.
func familyType(res *snapshot.Resource, fig ground.Figure) (signals.Type, bool) {
	if fig.Threshold {
		return "", false
	}
	var typ signals.Type
	switch fig.Family {
	case "cpu":
		typ = signals.TypeHighCPU
	case "memory":
		typ = signals.TypeHighMemory
	case "disk", "usage":
		typ = signals.TypeHighDisk
	default:
		return "", false
	}
	return typ, signals.Judges(typ, res.Kind)
}

// detected is the severity detection gives for typ on res in this run:
// the signal's, or "" when it evaluated res and found none. decided is
// false when detection could not evaluate it.
func (r *run) detected(res *snapshot.Resource, typ signals.Type) (severity string, decided bool) {
	id := snapshot.CanonicalID(res.ID)
	for i := range r.in.Signals {
		if s := &r.in.Signals[i]; s.Type == typ && snapshot.CanonicalID(s.ResourceID) == id {
			return s.Severity, true
		}
	}
	return "", signals.Evaluated(res, typ)
}

func detectedWord(typ signals.Type, severity string) string {
	if severity == "" {
		return "no " + string(typ) + " signal"
	}
	return string(typ) + " " + severity
}

func figure(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// measuredValue is the metric value detection read for typ on res.
func measuredValue(res *snapshot.Resource, typ signals.Type) (float64, bool) {
	var metric string
	switch {
	case typ == signals.TypeHighCPU:
		metric = snapshot.MetricCPU
	case typ == signals.TypeHighMemory:
		metric = snapshot.MetricMemory
	case typ == signals.TypeHighDisk && res.Kind == snapshot.KindStorage:
		metric = snapshot.MetricUsage
	case typ == signals.TypeHighDisk:
		metric = snapshot.MetricDisk
	default:
		return 0, false
	}
	v, _, ok := res.Metric(metric)
	return v, ok
}

func measured(res *snapshot.Resource, typ signals.Type) string {
	if v, ok := measuredValue(res, typ); ok {
		return " (measured " + figure(v) + ")"
	}
	return ""
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

// modelText is one field of model text on its way to the store, with
// its cap in characters.
type modelText struct {
	raw string
	max int
}

// file is the one way model text reaches the store. Every field is
// normalised first with prompt.SafeText. That fold makes it safe, so
// compatibility digits, invisible and space-like characters are what they
// look like. Then the normalised texts pass the disclosure guard and
// grounding, and exactly those texts are returned to be stored.
//
// The texts come back as prompt.Text, the only type the observation's
// text fields take: what is stored is the value the checks read.
func (r *run) file(resourceID, key string, fields ...modelText) ([]prompt.Text, *agent.ToolError) {
	out := make([]prompt.Text, len(fields))
	texts := make([]string, len(fields))
	for i, f := range fields {
		out[i] = prompt.Safe(f.raw, f.max)
		texts[i] = out[i].String()
	}
	if r.discloses(texts...) != "" {
		return nil, refused(ReasonDisclosure, "the text repeats the system policy and was not filed")
	}
	if err := r.ground(resourceID, key, texts...); err != nil {
		return nil, err
	}
	return out, nil
}

// ground checks a claim about one resource field by field. The resource
// must have been read in this run. Every figure must be a named quantity
// of that resource a tool result showed, and every resource id and node
// name one a tool result showed.
func (r *run) ground(resourceID, key string, texts ...string) *agent.ToolError {
	//mutate:resource-must-be-read ./cmd/patrold ^TestPatrolAttacks$
	if !r.facts.Read(resourceID) {
		return refused(ReasonUnsupportedClaim,
			"no tool result of this run showed %s; read it with %s before reporting on it", canonical(resourceID), ToolGetResource).
			With("unsupported", []string{canonical(resourceID)})
	}
	if bad := r.facts.Unsupported(resourceID, key, r.nodes, texts...); len(bad) > 0 {
		return refused(ReasonUnsupportedClaim,
			"the text states figures, times or resources that no tool result about %s showed as what the text names in this run: %s; quote a quantity with its name and unit as a tool result showed it",
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
	texts, terr := r.file(f.ResourceID, f.Key, modelText{args.Evidence, MaxTextChars})
	if terr != nil {
		return nil, terr
	}
	evidence := texts[0]
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.covered(f.ID) {
		return nil, refused(ReasonAlreadyAssessed, "finding %s already has a verdict or was re-reported in this run", f.ID)
	}
	out := assessResult{FindingID: f.ID, Verdict: args.Verdict}
	r.verdicts[f.ID] = args.Verdict
	switch args.Verdict {
	case VerdictPresent:
		//mutate:present-cannot-overrule ./cmd/patrold ^TestPatrolAttacks$
		if r.cleared(f) {
			// Detection decides a key it evaluates: the verdict is
			// recorded, and the finding resolves as condition_cleared.
			out.Resolution, out.Reason = "not_confirmed", "deterministic detection evaluated this condition in this run and found no signal; the finding resolves as "+findings.ResolveConditionCleared
			r.a.metrics.verdict(VerdictPresent, verdictNotConfirmed)
			break
		}
		//mutate:present-not-confirmed ./cmd/patrold ^TestProvenanceAttacks
		if why, ok := r.reGrounded(f, evidence); !ok {
			// A model finding under its own key is not kept open by
			// insisting: it resolves, and the answer says why.
			out.Resolution, out.Reason = "not_confirmed", why
			r.resolve[f.ID] = findings.ResolveNotConfirmed
			r.a.metrics.verdict(VerdictPresent, verdictNotConfirmed)
			break
		}
		r.filed = append(r.filed, signals.Filed{ResourceID: f.ResourceID, Key: f.Key, Category: string(f.Category), Severity: string(f.Severity)})
		if _, ok := r.obs[f.ID]; !ok {
			r.obs[f.ID] = reconfirm(f, evidence)
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

// cleared reports a finding whose key detection evaluates and whose
// condition this run's detection evaluated on the resource and did not
// find.
func (r *run) cleared(f *findings.Finding) bool {
	typ, ok := signals.Covering(f.Key, string(f.Category))
	if !ok {
		return false
	}
	res := r.byID[canonical(f.ResourceID)]
	if res == nil || !signals.Evaluated(res, typ) {
		return false
	}
	id := canonical(f.ResourceID)
	for i := range r.in.Signals {
		if s := &r.in.Signals[i]; s.Type == typ && canonical(s.ResourceID) == id {
			return false
		}
	}
	return true
}

// reGrounded reports whether a present verdict re-grounds a model
// finding under a key of its own: its evidence (grounded, so read in this
// run) names a quantity, and each named quantity the net has a trigger for
// is on the alarming side of it (detection finds its signal). Otherwise
// it says why. Findings under catalogue keys and the net's own are
// decided by detection instead.
func (r *run) reGrounded(f *findings.Finding, evidence prompt.Text) (string, bool) {
	if _, ok := signals.Lookup(f.Key); ok || f.Source != findings.SourceModel {
		return "", true
	}
	res := r.byID[canonical(f.ResourceID)]
	named := false
	for _, fig := range ground.ExtractClaims(evidence.String(), "").Figures {
		if fig.Family == "" || fig.Threshold {
			continue
		}
		named = true
		typ, ok := familyType(res, fig)
		if !ok {
			continue // no trigger for it: grounding alone supports it
		}
		if got, _ := r.detected(res, typ); got == "" {
			return fmt.Sprintf("the evidence names %s, and this run's detection finds no %s signal on %s%s, so the claim is not re-grounded; the finding resolves as %s",
				fig.Family, typ, res.ID, measured(res, typ), findings.ResolveNotConfirmed), false
		}
	}
	if !named {
		return "the evidence names no quantity measured in this run, so the claim is not re-grounded; the finding resolves as " + findings.ResolveNotConfirmed, false
	}
	return "", true
}

// reconfirm is the observation of a finding assessed present: its own
// identity and text, the model's evidence. Without it the run would not
// see the finding and reconciliation could resolve it.
//
// The stored text was safe when it was filed; it is built into texts
// again (SafeText is stable, so it is unchanged).
func reconfirm(f *findings.Finding, evidence prompt.Text) findings.Observation {
	return findings.Observation{
		Key: f.Key, ResourceID: f.ResourceID, ResourceKind: f.ResourceKind, ResourceName: prompt.SafeName(f.ResourceName),
		ResourceTags: prompt.SafeNames(f.ResourceTags), Category: f.Category, Severity: f.Severity, Source: f.Source,
		Title: prompt.Safe(f.Title, MaxTitleChars), Description: prompt.Safe(f.Description, MaxTextChars),
		Recommendation: prompt.Safe(f.Recommendation, MaxTextChars), Evidence: evidence,
	}
}

// confirmResolved is the deterministic check behind a resolved verdict.
// The key is a catalogue signal of the finding's category, its detector
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

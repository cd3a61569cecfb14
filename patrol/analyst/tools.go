package analyst

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/model/ground"
	"github.com/patrold/patrold/snapshot"
)

// Tool names of the model stages.
const (
	ToolListResources = "list_resources"
	ToolGetResource   = "get_resource"
	ToolListFindings  = "list_findings"
	ToolReportFinding = "report_finding"
	ToolAssessFinding = "assess_finding"
)

// Stage (and profile) names.
const (
	StageDetection  = "detection"
	StageEvaluation = "evaluation"
	StageAssessment = "assessment"
)

// Paging of the list tools.
const (
	DefaultListLimit = 50
	MaxListLimit     = 100
)

var readTools = []string{ToolListResources, ToolGetResource, ToolListFindings}

// Profiles returns the tool profile of each stage. No profile holds an
// infrastructure write: the only writes are report_finding and
// assess_finding, which change patrold's own state.
func Profiles() map[string]agent.Profile {
	with := func(name string, extra ...string) agent.Profile {
		return agent.Profile{Name: name, Tools: append(append([]string(nil), readTools...), extra...)}
	}
	return map[string]agent.Profile{
		StageDetection:  with(StageDetection, ToolReportFinding, ToolAssessFinding),
		StageEvaluation: with(StageEvaluation, ToolReportFinding),
		StageAssessment: with(StageAssessment, ToolAssessFinding),
	}
}

const (
	listResourcesSchema = `{"type":"object","additionalProperties":false,"properties":{
 "kind":{"type":"string","enum":["node","vm","container","storage","disk"],"description":"only resources of this kind"},
 "status":{"type":"string","description":"only resources with this status (online, offline, running, stopped, ...)"},
 "tag":{"type":"string","description":"only resources carrying this tag"},
 "offset":{"type":"integer","description":"skip this many matching resources (paging)"},
 "limit":{"type":"integer","description":"at most this many resources, 1..100 (default 50)"}}}`
	getResourceSchema = `{"type":"object","additionalProperties":false,"required":["id"],"properties":{
 "id":{"type":"string","description":"resource id, e.g. vm/101"}}}`
	listFindingsSchema = `{"type":"object","additionalProperties":false,"properties":{
 "resource_id":{"type":"string","description":"only findings on this resource"},
 "offset":{"type":"integer"},"limit":{"type":"integer","description":"1..100 (default 50)"}}}`
	reportFindingSchema = `{"type":"object","additionalProperties":false,
 "required":["resource_id","category","key","severity","title","evidence"],"properties":{
 "resource_id":{"type":"string","description":"id of the affected resource"},
 "category":{"type":"string","enum":["performance","capacity","reliability","backup","security","general"]},
 "key":{"type":"string","description":"short stable problem key, e.g. high_disk"},
 "severity":{"type":"string","enum":["info","watch","warning","critical"]},
 "title":{"type":"string"},"description":{"type":"string"},"recommendation":{"type":"string"},
 "evidence":{"type":"string","description":"figures and ids exactly as tool results of this run showed them"}}}`
	assessFindingSchema = `{"type":"object","additionalProperties":false,"required":["finding_id","verdict","evidence"],"properties":{
 "finding_id":{"type":"string"},
 "verdict":{"type":"string","enum":["present","resolved","uncertain"]},
 "evidence":{"type":"string"}}}`
)

// registry declares the stage tools with handlers bound to one run.
func (r *run) registry() (*agent.Registry, error) {
	write := func(name, desc, schema string, h agent.Handler) agent.Tool {
		return agent.Tool{Name: name, Description: desc, Schema: json.RawMessage(schema), Kind: agent.KindWrite,
			Target: agent.TargetPatrolState, WritesFindings: true, Handler: h}
	}
	read := func(name, desc, schema string, h agent.Handler) agent.Tool {
		return agent.Tool{Name: name, Description: desc, Schema: json.RawMessage(schema), Kind: agent.KindRead,
			Idempotent: true, Handler: ground.Recorded(r.facts, h)}
	}
	lf := read(ToolListFindings, "List the findings that were open before this run.", listFindingsSchema, r.listFindings)
	lf.ReadsFindings = true
	return agent.NewRegistry(
		read(ToolListResources, "List resources of the snapshot, optionally filtered by kind, status or tag; paginated.", listResourcesSchema, r.listResources),
		read(ToolGetResource, "Get one resource with its metrics, backup, SMART data, notes, logs and effective thresholds.", getResourceSchema, r.getResource),
		lf,
		write(ToolReportFinding, "File a finding about one resource. Evidence must quote figures and ids from tool results of this run.", reportFindingSchema, r.reportFinding),
		write(ToolAssessFinding, "Give a verdict on a finding that was open before this run: present, resolved or uncertain.", assessFindingSchema, r.assessFinding),
	)
}

type pageArgs struct {
	Offset int `json:"offset"`
	Limit  int `json:"limit"`
}

func (p pageArgs) bounds(n int) (lo, hi int, err error) {
	if p.Offset < 0 {
		return 0, 0, invalid("offset", "must not be negative, got %d", p.Offset)
	}
	limit := p.Limit
	if limit == 0 {
		limit = DefaultListLimit
	}
	if limit < 1 || limit > MaxListLimit {
		return 0, 0, invalid("limit", "must be within 1..%d, got %d", MaxListLimit, p.Limit)
	}
	lo = min(p.Offset, n)
	return lo, min(lo+limit, n), nil
}

type page[T any] struct {
	Items      []T `json:"items"`
	Total      int `json:"total"`
	NextOffset int `json:"next_offset,omitempty"`
}

func paginate[T any](all []T, p pageArgs) (page[T], error) {
	lo, hi, err := p.bounds(len(all))
	if err != nil {
		return page[T]{}, err
	}
	out := page[T]{Items: all[lo:hi], Total: len(all)}
	if out.Items == nil {
		out.Items = []T{}
	}
	if hi < len(all) {
		out.NextOffset = hi
	}
	return out, nil
}

func (r *run) listResources(_ context.Context, raw json.RawMessage) (any, error) {
	var args struct {
		Kind   string `json:"kind"`
		Status string `json:"status"`
		Tag    string `json:"tag"`
		pageArgs
	}
	if err := decodeArgs(raw, &args); err != nil {
		return nil, err
	}
	var all []resourceSummary
	for i := range r.in.Snapshot.Resources {
		res := &r.in.Snapshot.Resources[i]
		if (args.Kind != "" && string(res.Kind) != args.Kind) ||
			(args.Status != "" && !strings.EqualFold(res.Status, args.Status)) ||
			(args.Tag != "" && !res.HasTag(args.Tag)) {
			continue
		}
		all = append(all, summarise(res))
	}
	return paginate(all, args.pageArgs)
}

func (r *run) getResource(_ context.Context, raw json.RawMessage) (any, error) {
	var args struct {
		ID string `json:"id"`
	}
	if err := decodeArgs(raw, &args); err != nil {
		return nil, err
	}
	res := r.byID[snapshot.CanonicalID(args.ID)]
	if res == nil {
		return nil, notFound("id", "no resource %q in this snapshot; list_resources shows the ids", args.ID)
	}
	return viewResource(res, r.in.Thresholds.Resolve(res), r.in.Snapshot.TakenAt), nil
}

func (r *run) listFindings(_ context.Context, raw json.RawMessage) (any, error) {
	var args struct {
		ResourceID string `json:"resource_id"`
		pageArgs
	}
	if err := decodeArgs(raw, &args); err != nil {
		return nil, err
	}
	want := snapshot.CanonicalID(args.ResourceID)
	var all []findingView
	for _, id := range r.activeOrder {
		f := r.active[id]
		if want == "" || snapshot.CanonicalID(f.ResourceID) == want {
			all = append(all, viewFinding(f))
		}
	}
	return paginate(all, args.pageArgs)
}

// Classify returns the kind and write target of a stage tool as the
// registry declares them; ok is false for a name that is not a stage tool.
func Classify(name string) (kind agent.ToolKind, target agent.WriteTarget, ok bool) {
	reg, err := (&run{}).registry()
	if err != nil {
		return agent.KindWrite, agent.TargetInfrastructure, false
	}
	if _, ok := reg.Tool(name); !ok {
		return agent.KindWrite, agent.TargetInfrastructure, false
	}
	kind, target = reg.Classify(name, nil)
	return kind, target, true
}

// Capabilities describes the tools of every model stage (the capability
// manifest served by the API). No run state is touched.
func Capabilities() ([]agent.Capabilities, error) {
	reg, err := (&run{}).registry()
	if err != nil {
		return nil, err
	}
	var out []agent.Capabilities
	for _, stage := range []string{StageDetection, StageEvaluation, StageAssessment} {
		out = append(out, agent.Manifest(reg, Profiles()[stage]))
	}
	return out, nil
}

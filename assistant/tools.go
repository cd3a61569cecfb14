package assistant

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model/ground"
	"github.com/patrold/patrold/model/mask"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/snapshot"
)

// Remediation tool names.
const (
	ToolResolveTarget  = "resolve_target"
	ToolGetResource    = "get_resource"
	ToolCheckCondition = "check_condition"
	ToolGetFinding     = "get_finding"
	ToolRunAction      = "run_action"
	ToolAskOperator    = "ask_operator"
)

const (
	emptySchema    = `{"type":"object","properties":{},"additionalProperties":false}`
	resourceSchema = `{"type":"object","properties":{"id":{"type":"string","description":"resource id; default: the finding's resource"}},"additionalProperties":false}`
	questionSchema = `{"type":"object","properties":{"question":{"type":"string"}},"required":["question"],"additionalProperties":false}`
)

// env is the state the tools of one session share.
type env struct {
	a         *Assistant
	finding   findings.Finding
	sessionID string
	autonomy  findings.Autonomy

	mu         sync.Mutex
	resolved   *snapshot.Resource // the finding's resource as resolve_target last saw it live
	grant      string             // action an operator approved; consumed by one run
	request    *writeRequest      // a write waiting for approval
	executed   int                // actions executed (successful or not)
	lastExec   *ExecResult
	afterWrite Condition // last check_condition verdict since the last executed action
	lastCheck  *ConditionResult

	// corpus indexes what the read tools showed the model (fileText).
	corpus *ground.Corpus
	// masker hides names from the model (model.mask_names); nil: not
	// masked. learned: a live snapshot's names are in its vocabulary.
	masker  *mask.Masker
	learned bool
}

// writeRequest is a write that needs an operator's approval.
type writeRequest struct {
	Action Action
	Args   json.RawMessage
	// Reason is the model's reason, neutralised and capped.
	Reason prompt.Text
}

// tools declares the remediation profile's tools for this session.
func (e *env) tools() []agent.Tool {
	ts := []agent.Tool{
		{Name: ToolResolveTarget, Kind: agent.KindResolve, Schema: json.RawMessage(emptySchema), Idempotent: true, Verifies: true,
			Description: "Re-collect live state and confirm the finding's resource exists; returns it.", Handler: e.resolveTarget},
		{Name: ToolGetResource, Kind: agent.KindRead, Schema: json.RawMessage(resourceSchema), Idempotent: true,
			Description: "Fresh state of one resource (default: the finding's resource).", Handler: e.getResource},
		{Name: ToolCheckCondition, Kind: agent.KindRead, Schema: json.RawMessage(emptySchema), Idempotent: true, Verifies: true,
			Description: "Run the deterministic detector for the finding's key on fresh state: present, cleared or unknown.", Handler: e.checkCondition},
		{Name: ToolGetFinding, Kind: agent.KindRead, Schema: json.RawMessage(emptySchema), Idempotent: true,
			Description: "The finding being remediated, as patrold stored it (not live state).", Handler: e.getFinding},
	}
	// What the read tools show the model grounds its note and reasons.
	for i := range ts {
		ts[i].Handler = ground.Recorded(e.corpus, ts[i].Handler)
	}
	if t, ok := e.actionTool(); ok {
		ts = append(ts, t)
	}
	if e.a.opts.Operator != nil {
		ts = append(ts, agent.Tool{Name: ToolAskOperator, Kind: agent.KindUserInput, Schema: json.RawMessage(questionSchema),
			Description: "Ask the operator a question and wait for the answer.", Handler: e.askOperator})
	}
	return ts
}

func (e *env) collect(ctx context.Context) (*snapshot.Snapshot, error) {
	snap, _, err := e.a.opts.Source().Collect(ctx)
	if err != nil {
		return nil, agent.NewToolError(agent.CodeExecutionFailed, "collect live state: %v", err)
	}
	e.learn(snap)
	return snap, nil
}

func (e *env) resolveTarget(ctx context.Context, _ json.RawMessage) (any, error) {
	snap, err := e.collect(ctx)
	if err != nil {
		return nil, err
	}
	r := findResource(snap, e.finding.ResourceID)
	if r == nil {
		return nil, agent.NewToolError(agent.CodeNotFound, "resource %s is not in the current snapshot", safeName(e.finding.ResourceID)).
			With("resource_id", e.finding.ResourceID)
	}
	live := *r
	e.mu.Lock()
	e.resolved = &live
	e.mu.Unlock()
	return map[string]any{"finding_id": e.finding.ID, "key": e.finding.Key, "resource": e.view(r), "taken_at": snap.TakenAt}, nil
}

func (e *env) getResource(ctx context.Context, args json.RawMessage) (any, error) {
	var in struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(args, &in)
	if in.ID == "" {
		in.ID = e.finding.ResourceID
	}
	snap, err := e.collect(ctx)
	if err != nil {
		return nil, err
	}
	r := findResource(snap, in.ID)
	if r == nil {
		return nil, agent.NewToolError(agent.CodeNotFound, "resource %s is not in the current snapshot", safeName(in.ID)).With("resource_id", in.ID)
	}
	return e.view(r), nil
}

func (e *env) checkCondition(ctx context.Context, _ json.RawMessage) (any, error) {
	snap, err := e.collect(ctx)
	if err != nil {
		return nil, err
	}
	res := CheckCondition(snap, e.a.opts.Thresholds(), &e.finding)
	e.mu.Lock()
	e.afterWrite = res.Condition // reset by every executed action
	e.lastCheck = &res
	e.mu.Unlock()
	return res, nil
}

func (e *env) getFinding(ctx context.Context, _ json.RawMessage) (any, error) {
	f, err := e.a.opts.Store.Get(ctx, e.finding.ID)
	if err != nil {
		return nil, agent.NewToolError(agent.CodeNotFound, "finding %s: %v", e.finding.ID, err)
	}
	n := e.a.neut.Neutralise
	return map[string]any{
		"id": f.ID, "key": f.Key, "resource_id": f.ResourceID, "category": f.Category, "severity": f.Severity,
		"status": f.Status, "source": f.Source, "detected_at": f.DetectedAt, "last_seen_at": f.LastSeenAt,
		"title": n(f.Title).Text, "description": n(f.Description).Text, "evidence": n(f.Evidence).Text,
		"attempts": f.Attempts, "last_outcome": f.LastOutcome,
	}, nil
}

func (e *env) askOperator(ctx context.Context, args json.RawMessage) (any, error) {
	var in struct {
		Question string `json:"question"`
	}
	_ = json.Unmarshal(args, &in)
	// The operator sees patrold's rendering of the model's question.
	answer, err := e.a.opts.Operator.Ask(ctx, safeText(in.Question, maxSummaryRunes))
	if err != nil {
		return nil, agent.NewToolError(agent.CodeExecutionFailed, "no answer: %v", err)
	}
	return map[string]string{"answer": answer}, nil
}

// view is a resource as the model sees it: every text field a source
// supplies (id, name, parent, notes, tags, labels, logs, addresses, backup
// status and error) neutralised when it is read, on the raw text. The
// composer neutralises the encoded result once more and fences it.
func (e *env) view(r *snapshot.Resource) snapshot.Resource {
	v := *r
	n := e.a.neut.Neutralise
	v.Name, v.Notes = n(r.Name).Text, n(r.Notes).Text
	v.Tags = make([]string, len(r.Tags))
	for i, t := range r.Tags {
		v.Tags[i] = n(t).Text
	}
	v.Logs = make([]string, len(r.Logs))
	for i, l := range r.Logs {
		v.Logs[i] = n(l).Text
	}
	v.Labels = make(map[string]string, len(r.Labels))
	for k, l := range r.Labels {
		v.Labels[n(k).Text] = n(l).Text
	}
	v.ID, v.Parent = n(r.ID).Text, n(r.Parent).Text
	if r.Backup != nil {
		b := *r.Backup
		b.LastError, b.LastStatus = n(b.LastError).Text, n(b.LastStatus).Text
		v.Backup = &b
	}
	v.Addresses = make([]string, len(r.Addresses))
	for i, a := range r.Addresses {
		v.Addresses[i] = n(a).Text
	}
	return v
}

// Capabilities describes the remediation profile with the configured
// actions (the capability manifest served by the API).
func (a *Assistant) Capabilities() (agent.Capabilities, error) {
	e := &env{a: a}
	reg, err := agent.NewRegistry(e.tools()...)
	if err != nil {
		return agent.Capabilities{}, err
	}
	return agent.Manifest(reg, agent.Profile{Name: ProfileName, Tools: reg.Names()}), nil
}

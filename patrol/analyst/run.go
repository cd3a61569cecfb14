package analyst

import (
	"sort"
	"strings"
	"sync"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/ground"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// scopeKey is what matching compares: canonical resource id and category.
type scopeKey struct{ id, category string }

// run is the state of one Analyze call. Tool handlers may run
// concurrently; everything below mu is guarded by it.
type run struct {
	a           *Analyst
	in          patrol.AnalysisInput
	byID        map[string]*snapshot.Resource
	active      map[string]*findings.Finding
	activeOrder []string
	budget      *model.Budget
	rec         *model.Recorder
	fsm         *agent.FSM
	reg         *agent.Registry
	facts       *ground.Corpus
	// placeholders refuses made-up placeholders (model.mask_names); nil
	// when names are not masked.
	placeholders agent.Placeholders

	mu        sync.Mutex
	obs       map[string]findings.Observation // by finding id
	filed     []signals.Filed
	verdicts  map[string]string // finding id -> verdict
	resolve   map[string]string
	uncertain int
	scope     map[scopeKey]bool // evaluation pass: the unmatched pairs
	scopeUsed map[scopeKey]bool
	// reported counts the model findings filed in this run, perResource
	// those per canonical resource id, capRefused the reports the caps
	// refused.
	reported    int
	perResource map[string]int
	capRefused  int
	nodes       map[string]string // node name -> canonical node id

	reasons []string
	errs    []string
	turns   int
	stopped bool // budget exhausted or the model failed: no more calls
}

func (a *Analyst) newRun(in patrol.AnalysisInput, budget *model.Budget, rec *model.Recorder) (*run, error) {
	r := &run{
		a: a, in: in, budget: budget, rec: rec, fsm: agent.NewFSM(), facts: ground.NewCorpus(),
		byID: make(map[string]*snapshot.Resource, len(in.Snapshot.Resources)), active: make(map[string]*findings.Finding, len(in.Active)),
		obs: map[string]findings.Observation{}, verdicts: map[string]string{}, resolve: map[string]string{},
		perResource: map[string]int{}, nodes: map[string]string{},
	}
	for i := range in.Snapshot.Resources {
		res := &in.Snapshot.Resources[i]
		id := snapshot.CanonicalID(res.ID)
		r.byID[id] = res
		if res.Kind == snapshot.KindNode {
			r.nodes[strings.ToLower(strings.TrimPrefix(id, "node/"))] = id
			if res.Name != "" {
				r.nodes[strings.ToLower(res.Name)] = id
			}
		}
	}
	for i := range in.Active {
		f := &in.Active[i]
		if _, dup := r.active[f.ID]; !dup {
			r.active[f.ID] = f
			r.activeOrder = append(r.activeOrder, f.ID)
		}
	}
	reg, err := r.registry()
	if err != nil {
		return nil, err
	}
	r.reg = reg
	return r, nil
}

func (r *run) addReason(reason string) {
	for _, x := range r.reasons {
		if x == reason {
			return
		}
	}
	r.reasons = append(r.reasons, reason)
}

// filedSoFar returns the matching input collected so far.
func (r *run) filedSoFar() []signals.Filed {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]signals.Filed(nil), r.filed...)
}

// covered reports whether an active finding already has a verdict or was
// re-reported in this run. Call with mu held.
func (r *run) covered(id string) bool {
	if _, ok := r.verdicts[id]; ok {
		return true
	}
	o, ok := r.obs[id]
	return ok && o.Source == findings.SourceModel
}

// analysis assembles the result. Observations are in finding-id order so
// the result does not depend on the order parallel tool calls finished in.
func (r *run) analysis() *patrol.Analysis {
	r.mu.Lock()
	defer r.mu.Unlock()
	an := &patrol.Analysis{Filed: append([]signals.Filed(nil), r.filed...), Uncertain: r.uncertain, Capped: r.capRefused,
		Reasons: append([]string(nil), r.reasons...), Errors: append([]string(nil), r.errs...)}
	ids := make([]string, 0, len(r.obs))
	for id := range r.obs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		an.Observations = append(an.Observations, r.obs[id])
	}
	for id, reason := range r.resolve {
		if _, observed := r.obs[id]; observed {
			continue // re-reported after the verdict: the report wins
		}
		if an.Resolve == nil {
			an.Resolve = map[string]string{}
		}
		an.Resolve[id] = reason
	}
	return an
}

func canonical(id string) string { return snapshot.CanonicalID(id) }

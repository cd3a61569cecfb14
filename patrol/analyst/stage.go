package analyst

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/mask"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/signals"
)

// Analyze runs the model stages of one run. It never fails the run: a
// budget or model problem is reported in the Analysis (Reasons, Errors)
// along with everything filed before it; the runner files the rest
// deterministically. It returns an error only for an invalid input.
func (a *Analyst) Analyze(ctx context.Context, in patrol.AnalysisInput) (*patrol.Analysis, error) {
	if in.Snapshot == nil {
		return nil, errors.New("analyze: snapshot: required")
	}
	if in.Thresholds == nil {
		return nil, errors.New("analyze: thresholds: required")
	}
	if in.Now.IsZero() {
		in.Now = a.now()
	}
	budget, err := model.NewBudget(a.opts.Budget, a.opts.Prices, a.opts.Ledger)
	if err != nil {
		return nil, fmt.Errorf("analyze: budget: %w", err)
	}
	// Step 2: pre-flight, before any context is built.
	if err := budget.Allow(in.Now, 0); err != nil {
		a.metrics.preflight.Inc()
		for _, s := range stageNames {
			a.metrics.stage(s, OutcomeSkipped)
		}
		a.log.Info("model stages skipped", "reason", model.ReasonBudgetExhausted, "err", err)
		return &patrol.Analysis{Reasons: []string{model.ReasonBudgetExhausted}, Errors: []string{"model stages skipped: " + err.Error()}}, nil
	}
	provider := a.opts.Provider
	var masker *mask.Masker
	if a.opts.MaskNames {
		masker = mask.New(maskVocabulary(in))
		provider = &mask.Provider{Next: provider, Masker: masker}
	}
	rec, err := model.NewRecorder(provider, a.now)
	if err != nil {
		return nil, fmt.Errorf("analyze: %w", err)
	}
	r, err := a.newRun(in, budget, rec)
	if err != nil {
		return nil, fmt.Errorf("analyze: %w", err)
	}
	if masker != nil {
		r.placeholders = masker
	}
	tri := NewTriage(in.Snapshot, in.Signals, in.Thresholds)
	r.detect(ctx, tri)
	r.evaluate(ctx)
	r.sweep(ctx)
	return r.finish(), nil
}

func (r *run) detect(ctx context.Context, tri *Triage) {
	cv := r.a.composer.Conversation()
	r.detectionSeed(cv, tri)
	r.runStage(ctx, StageDetection, cv, DetectionTurns(tri.Flags()))
}

// evaluate offers the signals no finding of this run matched (the same
// matcher the runner uses) once more, scoped to exactly those. A held
// signal is not offered: its parent already explains it.
func (r *run) evaluate(ctx context.Context) {
	_, all := signals.Match(r.in.Signals, r.filedSoFar())
	unmatched := make([]signals.Signal, 0, len(all))
	for _, s := range all {
		//mutate:evaluation-skips-held ./patrol/analyst ^TestEvaluationPassSkipsHeld$
		if r.in.Held[s.Key()] {
			continue
		}
		unmatched = append(unmatched, s)
	}
	if len(unmatched) == 0 {
		return
	}
	r.mu.Lock()
	r.scope, r.scopeUsed = map[scopeKey]bool{}, map[scopeKey]bool{}
	for _, s := range unmatched {
		r.scope[scopeKey{canonical(s.ResourceID), s.Category}] = true
	}
	r.mu.Unlock()
	cv := r.a.composer.Conversation()
	r.evaluationSeed(cv, unmatched)
	r.runStage(ctx, StageEvaluation, cv, evaluationTurns)
	r.mu.Lock()
	r.scope, r.scopeUsed = nil, nil
	r.mu.Unlock()
}

// sweep asks for verdicts on the previously active findings that have
// none yet.
func (r *run) sweep(ctx context.Context) {
	r.mu.Lock()
	var pending []string
	for _, id := range r.activeOrder {
		if !r.covered(id) {
			pending = append(pending, id)
		}
	}
	r.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	cv := r.a.composer.Conversation()
	r.sweepSeed(cv, pending)
	r.runStage(ctx, StageAssessment, cv, SweepTurns(len(pending)))
}

// runStage drives one agent session over cv. The run's state machine is
// shared by the stages, so a target read in one stage stays established.
func (r *run) runStage(ctx context.Context, stage string, cv *prompt.Conversation, turns int) {
	if r.stopped {
		r.a.metrics.stage(stage, OutcomeSkipped)
		return
	}
	m := &meter{r: r}
	sess, err := agent.NewSession(agent.Options{
		Provider: &prompt.Provider{Next: r.rec, Conv: cv, Guard: r.a.composer.Guard(), Window: r.a.opts.ContextWindow,
			MaxOutput: r.a.opts.MaxOutputTokens, Skip: 1},
		Registry: r.reg, Profile: Profiles()[stage], System: Policy, MaxTurns: turns,
		MaxTokens: r.a.opts.MaxOutputTokens, FSM: r.fsm, TurnBudget: m.check, Placeholders: r.placeholders,
		Metrics: r.a.opts.AgentMetrics, Logger: r.a.opts.Logger, Now: r.a.now,
	})
	if err != nil {
		r.errs = append(r.errs, fmt.Sprintf("%s: %v", stage, err))
		r.a.metrics.stage(stage, OutcomeModelFailed)
		return
	}
	res, err := sess.Run(ctx, []model.Message{{Role: model.RoleUser, Content: seedPlaceholder}})
	outcome := OutcomeModelFailed
	if res != nil {
		m.charge(res.Usage)
		r.turns += res.Turns
		outcome = string(res.StopReason)
		if res.FinalAnswer != "" && !r.a.composer.Guard().Check(res.FinalAnswer) {
			r.a.metrics.withheld.Inc() // the text is neither logged nor kept
		}
	}
	switch {
	case errors.Is(err, prompt.ErrContextFull):
		outcome = OutcomeContextFull
	case err != nil:
		outcome = OutcomeModelFailed
		r.stopped = true
		r.addReason(patrol.ReasonModelFailed)
		r.errs = append(r.errs, fmt.Sprintf("%s stage: %v", stage, err))
	}
	if r.budget.Exhausted() {
		r.stopped = true
		r.addReason(model.ReasonBudgetExhausted)
		if outcome != OutcomeModelFailed {
			outcome = OutcomeBudgetExhausted
		}
	}
	r.a.metrics.stage(stage, outcome)
	r.a.log.Info("model stage finished", "stage", stage, "outcome", outcome, "turns", turnsOf(res))
}

func turnsOf(res *agent.Result) int {
	if res == nil {
		return 0
	}
	return res.Turns
}

// meter charges every turn of one session to the run's budget. The agent
// runtime calls check before each turn with the session's usage so far.
type meter struct {
	r    *run
	prev model.Usage
}

func (m *meter) check(_ int, u model.Usage) error {
	m.charge(u)
	return m.r.budget.Err()
}

func (m *meter) charge(u model.Usage) {
	// The turn's cache reads and writes go with it: the budget prices
	// them at the cache rates (docs/MODELS.md).
	d := u.Sub(m.prev)
	m.prev = u
	if _, err := m.r.budget.Record(m.r.a.now(), d, m.r.a.opts.Model); err != nil {
		m.r.errs = append(m.r.errs, "model budget: "+err.Error())
	}
}

// finish assembles the Analysis with the usage and the recorded exchange.
// Replies the disclosure guard refuses are withheld from the recording.
func (r *run) finish() *patrol.Analysis {
	an := r.analysis()
	rec := r.rec.Recording()
	guard := r.a.composer.Guard()
	for i := range rec.Exchanges {
		if resp := rec.Exchanges[i].Response; resp != nil && !guard.Check(resp.Text) {
			cp := *resp
			cp.Text = prompt.WithheldText
			rec.Exchanges[i].Response = &cp
		}
	}
	u := rec.Usage()
	an.Usage = patrol.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CostUSD: r.budget.Spent(), Turns: r.turns}
	if len(rec.Exchanges) > 0 {
		if b, err := json.Marshal(rec); err == nil {
			an.Exchange = b
		} else {
			an.Errors = append(an.Errors, "encode model exchange: "+err.Error())
		}
	}
	return an
}

// maskVocabulary is what model.mask_names hides in a run: the snapshot's
// names and the resources of the findings already open.
// An active finding's resource may be gone from the snapshot while its
// title, node and tags still reach the model: its name, node and tags are
// terms too, as a session's finding vocabulary has them.
func maskVocabulary(in patrol.AnalysisInput) mask.Vocabulary {
	ids := make([]string, 0, len(in.Active))
	for i := range in.Active {
		ids = append(ids, in.Active[i].ResourceID)
	}
	v := mask.ForSnapshot(in.Snapshot, ids...)
	for i := range in.Active {
		f := &in.Active[i]
		//mutate:mask-active-finding-names ./patrol/analyst ^TestMaskVocabularyHasActiveFindingNames$
		for _, n := range []string{f.ResourceName, f.ResourceNode} {
			if n != "" {
				v.Names = append(v.Names, n)
			}
		}
		v.Tags = append(v.Tags, f.ResourceTags...)
	}
	return v
}

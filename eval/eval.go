package eval

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// ResultVersion is the version of the JSON result.
const ResultVersion = 1

// Default qualification bars.
const (
	DefaultMinRecall = 0.8
	// DefaultMinPrecision: at least four in five model findings are
	// supported, neither a duplicate nor above the measurement.
	DefaultMinPrecision   = 0.8
	DefaultMaxUnsupported = 0
)

// Bars are what a model must reach to qualify.
type Bars struct {
	// MinRecall is the least overall recall (every repetition's).
	MinRecall float64 `json:"min_recall"`
	// MinPrecision is the least overall precision (every repetition's).
	MinPrecision float64 `json:"min_precision"`
	// MaxUnsupported is the most model findings neither the net nor the
	// ground truth supports, over the whole evaluation.
	MaxUnsupported int `json:"max_unsupported_filed"`
	// MaxTokensPerRun bounds input plus output tokens of one scenario
	// run (0: no bound).
	MaxTokensPerRun int `json:"max_tokens_per_run"`
}

// DefaultBars are the bars of docs/MODELS.md.
func DefaultBars() Bars {
	return Bars{MinRecall: DefaultMinRecall, MinPrecision: DefaultMinPrecision, MaxUnsupported: DefaultMaxUnsupported}
}

// Validate names the bar.
func (b Bars) Validate() error {
	var errs []error
	if b.MinRecall < 0 || b.MinRecall > 1 || math.IsNaN(b.MinRecall) {
		errs = append(errs, fmt.Errorf("min_recall: %g is outside 0..1", b.MinRecall))
	}
	if b.MinPrecision < 0 || b.MinPrecision > 1 || math.IsNaN(b.MinPrecision) {
		errs = append(errs, fmt.Errorf("min_precision: %g is outside 0..1", b.MinPrecision))
	}
	if b.MaxUnsupported < 0 {
		errs = append(errs, fmt.Errorf("max_unsupported_filed: %d must not be negative", b.MaxUnsupported))
	}
	if b.MaxTokensPerRun < 0 {
		errs = append(errs, fmt.Errorf("max_tokens_per_run: %d must not be negative (0: no bound)", b.MaxTokensPerRun))
	}
	return errors.Join(errs...)
}

// Analyst builds the model stages of one run around p, registering its
// metrics and the agent runtime's on reg (the daemon's composition, so the
// run is a real one). Refused claims and calls are read from reg.
type Analyst func(p model.Provider, reg prometheus.Registerer) (patrol.Analyst, error)

// Store is a throwaway findings store.
type Store interface {
	patrol.Store
	patrol.UsageHistory
	Close() error
}

// OpenStore opens (creating it) the store at path.
type OpenStore func(ctx context.Context, path string) (Store, error)

// Options configure an evaluation.
type Options struct {
	// OpenStore opens each run's throwaway store; required.
	OpenStore OpenStore
	Scenarios []*Scenario
	// Repeat runs every scenario this many times (0: once).
	Repeat int
	// Provider returns a fresh model for one run of a scenario.
	Provider func(sc *Scenario) (model.Provider, error)
	Analyst  Analyst
	// Provider and Model name the model in the result.
	ProviderName string
	ModelName    string
	// ContextTokens is the model's context window: a request estimated
	// above it fails the token-budget bar (0: not checked).
	ContextTokens int
	Bars          Bars
	// TempDir holds the throwaway stores ("": the system's).
	TempDir string
	// Clock measures wall time (nil: time.Now).
	Clock func() time.Time
}

// Result is the outcome of an evaluation (`patrold eval --output json`).
type Result struct {
	Version       int              `json:"version"`
	Provider      string           `json:"provider"`
	Model         string           `json:"model"`
	ContextTokens int              `json:"context_tokens"`
	Repeat        int              `json:"repeat"`
	Bars          Bars             `json:"bars"`
	Scenarios     []ScenarioResult `json:"scenarios"`
	Overall       Overall          `json:"overall"`
	Qualification Qualification    `json:"qualification"`
}

// ScenarioResult is one scenario's figures, per repetition.
type ScenarioResult struct {
	Name      string    `json:"name"`
	File      string    `json:"file"`
	Runs      []Figures `json:"runs"`
	Recall    *Spread   `json:"recall"`    // nil: the scenario has no signals
	Precision *Spread   `json:"precision"` // nil: the model filed nothing
}

// Figures are the measurements of one scenario run.
type Figures struct {
	Status        string      `json:"status"`
	StatusReasons []string    `json:"status_reasons"`
	Missed        []SignalRef `json:"missed"`
	Recall        *float64    `json:"recall"`
	Precision     *float64    `json:"precision"`
	// CachedShare is the share of input read from the prompt cache from
	// the run's second request on (nil: a single request).
	CachedShare *float64 `json:"cached_share"`
	Counts
}

// Counts are the figures that add up over runs.
type Counts struct {
	Signals int `json:"signals"`
	// Held are the signals a deterministic parent of the run holds (an
	// operation window, an offline node): a model is not asked to file
	// them, and recall is over the others.
	Held int `json:"held"`
	// FiledByModel are the signals not held that a model finding matched
	// (same resource and category, severity at least the signal's).
	FiledByModel int `json:"filed_by_model"`
	// ModelFindings are the findings of the run whose source is the model.
	ModelFindings int `json:"model_findings"`
	Supported     int `json:"supported"`
	// UnsupportedFiled are model findings neither the net nor the ground
	// truth supports.
	UnsupportedFiled int `json:"unsupported_filed"`
	// Duplicates are model findings on a supported resource and category
	// beyond the findings the truth holds there (other keys of the same
	// problem).
	Duplicates int `json:"duplicates"`
	// AboveMeasurement are model findings more severe than what the net
	// measured on their resource and category.
	AboveMeasurement int `json:"above_measurement"`
	// RefusedClaims are reports refused as unsupported_claim.
	RefusedClaims int `json:"refused_claims"`
	// RefusedCalls are tool calls answered with an error or a refusal.
	RefusedCalls int `json:"refused_calls"`
	Turns        int `json:"turns"`
	Requests     int `json:"requests"`
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	// CacheReadTokens and CacheWriteTokens are the parts of InputTokens
	// the provider read from and wrote to its prompt cache.
	CacheReadTokens  int `json:"cache_read_tokens"`
	CacheWriteTokens int `json:"cache_write_tokens"`
	// LaterInputTokens and LaterCacheReadTokens count the requests after
	// a run's first: the cached share is their ratio.
	LaterInputTokens     int     `json:"later_input_tokens"`
	LaterCacheReadTokens int     `json:"later_cache_read_tokens"`
	CostUSD              float64 `json:"cost_usd"`
	WallMS               int64   `json:"wall_ms"`
	// LargestRequestTokens is a maximum, not a sum.
	LargestRequestTokens int `json:"largest_request_tokens"`
}

// add sums o into c (the largest request is the larger of the two).
func (c *Counts) add(o Counts) {
	c.Signals += o.Signals
	c.Held += o.Held
	c.FiledByModel += o.FiledByModel
	c.ModelFindings += o.ModelFindings
	c.Supported += o.Supported
	c.UnsupportedFiled += o.UnsupportedFiled
	c.Duplicates += o.Duplicates
	c.AboveMeasurement += o.AboveMeasurement
	c.RefusedClaims += o.RefusedClaims
	c.RefusedCalls += o.RefusedCalls
	c.Turns += o.Turns
	c.Requests += o.Requests
	c.InputTokens += o.InputTokens
	c.OutputTokens += o.OutputTokens
	c.CacheReadTokens += o.CacheReadTokens
	c.CacheWriteTokens += o.CacheWriteTokens
	c.LaterInputTokens += o.LaterInputTokens
	c.LaterCacheReadTokens += o.LaterCacheReadTokens
	c.CostUSD += o.CostUSD
	c.WallMS += o.WallMS
	c.LargestRequestTokens = max(c.LargestRequestTokens, o.LargestRequestTokens)
}

// Spread is the mean, least and largest value over repetitions.
type Spread struct {
	Mean float64 `json:"mean"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
}

// Overall sums every run of every scenario.
type Overall struct {
	Scenarios    int      `json:"scenarios"`
	Runs         int      `json:"runs"`
	Recall       *float64 `json:"recall"`
	RecallSpread *Spread  `json:"recall_spread"` // over repetitions
	Precision    *float64 `json:"precision"`
	// CachedShare is over every run's requests after its first.
	CachedShare *float64 `json:"cached_share"`
	// PrecisionSpread is over repetitions (nil: the model filed nothing).
	PrecisionSpread *Spread `json:"precision_spread"`
	Counts
}

// Qualification says whether the model reached the bars.
type Qualification struct {
	Passed   bool     `json:"passed"`
	Failures []string `json:"failures"`
}

// Run evaluates the model over the scenarios. It fails only when a run
// cannot be set up (a store, a provider); a model that fails is measured.
func Run(ctx context.Context, o Options) (*Result, error) {
	if len(o.Scenarios) == 0 {
		return nil, errors.New("eval: scenarios: none")
	}
	if o.Provider == nil || o.Analyst == nil || o.OpenStore == nil {
		return nil, errors.New("eval: provider, analyst and store: required")
	}
	if o.Repeat == 0 {
		o.Repeat = 1
	}
	if o.Repeat < 0 || o.Repeat > 100 {
		return nil, fmt.Errorf("eval: repeat: %d is outside 1..100", o.Repeat)
	}
	if err := o.Bars.Validate(); err != nil {
		return nil, fmt.Errorf("eval: bars: %w", err)
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	pol, err := alerts.New(alerts.Settings{})
	if err != nil {
		return nil, err
	}
	res := &Result{Version: ResultVersion, Provider: o.ProviderName, Model: o.ModelName, ContextTokens: o.ContextTokens,
		Repeat: o.Repeat, Bars: o.Bars}
	for _, sc := range o.Scenarios {
		sr := ScenarioResult{Name: sc.Name, File: sc.file}
		for range o.Repeat {
			f, err := runOnce(ctx, o, pol, sc)
			if err != nil {
				return nil, fmt.Errorf("eval: %s: %w", sc.Name, err)
			}
			sr.Runs = append(sr.Runs, f)
		}
		sr.Recall = spread(sr.Runs, func(f Figures) *float64 { return f.Recall })
		sr.Precision = spread(sr.Runs, func(f Figures) *float64 { return f.Precision })
		res.Scenarios = append(res.Scenarios, sr)
	}
	res.Overall = overall(res.Scenarios, o.Repeat)
	res.Qualification = qualify(res, o)
	return res, nil
}

func spread(runs []Figures, v func(Figures) *float64) *Spread {
	var xs []float64
	for _, f := range runs {
		if p := v(f); p != nil {
			xs = append(xs, *p)
		}
	}
	if len(xs) == 0 {
		return nil
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return &Spread{Mean: round(sum / float64(len(xs))), Min: slices.Min(xs), Max: slices.Max(xs)}
}

// ratio is n/d rounded to four decimals, nil when d is 0.
func ratio(n, d int) *float64 {
	if d == 0 {
		return nil
	}
	r := round(float64(n) / float64(d))
	return &r
}

func round(x float64) float64 { return math.Round(x*1e4) / 1e4 }

func overall(scs []ScenarioResult, repeat int) Overall {
	o := Overall{Scenarios: len(scs)}
	perRep := make([]Figures, repeat) // sums per repetition, for the spread
	for _, sc := range scs {
		for i, f := range sc.Runs {
			o.Runs++
			o.add(f.Counts)
			perRep[i].add(f.Counts)
		}
	}
	o.CostUSD = math.Round(o.CostUSD*1e6) / 1e6
	o.Recall = o.recall()
	o.Precision = ratio(o.Supported, o.ModelFindings)
	o.CachedShare = ratio(o.LaterCacheReadTokens, o.LaterInputTokens)
	for i := range perRep {
		perRep[i].Recall = perRep[i].recall()
		perRep[i].Precision = ratio(perRep[i].Supported, perRep[i].ModelFindings)
	}
	o.RecallSpread = spread(perRep, func(f Figures) *float64 { return f.Recall })
	o.PrecisionSpread = spread(perRep, func(f Figures) *float64 { return f.Precision })
	return o
}

func qualify(res *Result, o Options) Qualification {
	q := Qualification{Failures: []string{}}
	ov := res.Overall
	if ov.RecallSpread != nil && ov.RecallSpread.Min < o.Bars.MinRecall {
		q.Failures = append(q.Failures, fmt.Sprintf("recall %.4g is below the bar %.4g", ov.RecallSpread.Min, o.Bars.MinRecall))
	}
	// A model that files nothing has no precision; recall judges it.
	if ov.PrecisionSpread != nil && ov.PrecisionSpread.Min < o.Bars.MinPrecision {
		q.Failures = append(q.Failures, fmt.Sprintf("precision %.4g is below the bar %.4g", ov.PrecisionSpread.Min, o.Bars.MinPrecision))
	}
	if ov.UnsupportedFiled > o.Bars.MaxUnsupported {
		q.Failures = append(q.Failures, fmt.Sprintf("%d unsupported findings filed, the bar is at most %d", ov.UnsupportedFiled, o.Bars.MaxUnsupported))
	}
	for _, sc := range res.Scenarios {
		for i, f := range sc.Runs {
			where := fmt.Sprintf("%s (run %d)", sc.Name, i+1)
			if slices.Contains(f.StatusReasons, patrol.ReasonBudgetExhausted) {
				q.Failures = append(q.Failures, where+": the budget ran out (budget_exhausted)")
			}
			if o.Bars.MaxTokensPerRun > 0 && f.InputTokens+f.OutputTokens > o.Bars.MaxTokensPerRun {
				q.Failures = append(q.Failures, fmt.Sprintf("%s: %d tokens, the bar is at most %d per run", where, f.InputTokens+f.OutputTokens, o.Bars.MaxTokensPerRun))
			}
			if o.ContextTokens > 0 && f.LargestRequestTokens > o.ContextTokens {
				q.Failures = append(q.Failures, fmt.Sprintf("%s: a request of %d tokens exceeds context_tokens %d", where, f.LargestRequestTokens, o.ContextTokens))
			}
		}
	}
	q.Passed = len(q.Failures) == 0
	return q
}

// runOnce patrols one scenario on a throwaway store: Before without a
// model, then the scenario's fleet with it.
func runOnce(ctx context.Context, o Options, pol *alerts.Policy, sc *Scenario) (Figures, error) {
	dir, err := os.MkdirTemp(o.TempDir, "patrold-eval-")
	if err != nil {
		return Figures{}, err
	}
	defer os.RemoveAll(dir)
	st, err := o.OpenStore(ctx, filepath.Join(dir, "eval.db"))
	if err != nil {
		return Figures{}, err
	}
	defer st.Close()
	if err := prepare(ctx, st, pol, sc); err != nil {
		return Figures{}, err
	}
	p, err := o.Provider(sc)
	if err != nil {
		return Figures{}, err
	}
	m := &meter{p: p}
	reg := prometheus.NewRegistry()
	an, err := o.Analyst(m, reg)
	if err != nil {
		return Figures{}, err
	}
	start := o.Clock()
	rep, runErr := patrolOnce(ctx, st, pol, an, sc.Snapshot())
	wall := o.Clock().Sub(start)
	if rep == nil {
		return Figures{}, runErr
	}
	f := measure(rep, sc)
	f.WallMS = wall.Milliseconds()
	f.Requests, f.LargestRequestTokens = m.figures()
	f.CacheReadTokens, f.CacheWriteTokens = m.total.CacheReadTokens, m.total.CacheWriteTokens
	f.LaterInputTokens, f.LaterCacheReadTokens = m.later.InputTokens, m.later.CacheReadTokens
	f.CachedShare = ratio(f.LaterCacheReadTokens, f.LaterInputTokens)
	mf, err := reg.Gather()
	if err != nil {
		return Figures{}, err
	}
	f.RefusedClaims = int(sum(mf, "patrold_analyst_reports_total", func(l map[string]string) bool { return l["outcome"] == "unsupported_claim" }))
	f.RefusedCalls = int(sum(mf, "patrold_agent_tool_calls_total", func(l map[string]string) bool { return l["outcome"] != "ok" }))
	return f, nil
}

// prepare brings a throwaway store to where the scenario starts: its
// usage history recorded, then Before patrolled without a model.
func prepare(ctx context.Context, st Store, pol *alerts.Policy, sc *Scenario) error {
	if err := sc.seedHistory(ctx, st); err != nil {
		return err
	}
	if prev := sc.BeforeSnapshot(); prev != nil {
		if _, err := patrolOnce(ctx, st, pol, nil, prev); err != nil {
			return fmt.Errorf("before: %w", err)
		}
	}
	return nil
}

func patrolOnce(ctx context.Context, st Store, pol *alerts.Policy, an patrol.Analyst, snap *snapshot.Snapshot) (*patrol.Report, error) {
	set := patrol.Settings{Policy: pol, Publish: findings.DefaultPublishPolicy(), Analyst: an}
	now := snap.TakenAt
	runner, err := patrol.New(patrol.Options{Store: st, History: st, Settings: func() patrol.Settings { return set }, Now: func() time.Time { return now }})
	if err != nil {
		return nil, err
	}
	return runner.Run(ctx, patrol.TriggerManual, patrol.RunOptions{Snapshot: snap})
}

// measure reads the figures of a run report against the ground truth.
func measure(rep *patrol.Report, sc *Scenario) Figures {
	f := Figures{Status: rep.Status, StatusReasons: append([]string{}, rep.StatusReasons...), Missed: []SignalRef{},
		Counts: Counts{Signals: len(rep.Signals), Turns: rep.Usage.Turns, InputTokens: rep.Usage.InputTokens,
			OutputTokens: rep.Usage.OutputTokens, CostUSD: rep.Usage.CostUSD}}
	held := heldSignals(rep)
	f.Held = len(held)
	sev := map[signals.Key]string{}
	for _, s := range rep.Signals {
		sev[s.Key()] = s.Severity
	}
	missed := 0
	for _, u := range rep.UnmatchedSignals {
		k := signals.Key{Type: u.Type, ResourceID: u.ResourceID}
		if held[k] {
			continue
		}
		missed++
		f.Missed = append(f.Missed, SignalRef{Type: u.Type, ResourceID: u.ResourceID, Severity: sev[k]})
	}
	f.FiledByModel = f.Signals - f.Held - missed
	f.Recall = f.recall()
	truths := groundTruth(rep, sc)
	byPair := map[Pair][]patrol.FindingRef{}
	var pairs []Pair
	for _, fr := range rep.Findings {
		// Before is patrolled without a model: a model finding is one
		// of this run.
		if fr.Source != findings.SourceModel {
			continue
		}
		f.ModelFindings++
		p := Pair{snapshot.CanonicalID(fr.ResourceID), string(fr.Category)}
		if truths[p] == nil {
			f.UnsupportedFiled++
			continue
		}
		if byPair[p] == nil {
			pairs = append(pairs, p)
		}
		byPair[p] = append(byPair[p], fr)
	}
	for _, p := range pairs {
		t := truths[p]
		// The truth's own keys take the places first: another key on
		// the same problem is the duplicate.
		frs := byPair[p]
		slices.SortStableFunc(frs, func(a, b patrol.FindingRef) int { return t.other(a.Key) - t.other(b.Key) })
		for i, fr := range frs {
			if i >= t.room() {
				f.Duplicates++
				continue
			}
			if fr.Severity.Rank() > t.ceiling() {
				f.AboveMeasurement++
				continue
			}
			f.Supported++
		}
	}
	f.Precision = ratio(f.Supported, f.ModelFindings)
	return f
}

// heldSignals are the run's signals whose finding a parent finding of
// the run holds (the finding with the signal's own key). Held signals the
// model filed under that key count as held too.
func heldSignals(rep *patrol.Report) map[signals.Key]bool {
	held := map[signals.Key]bool{}
	byID := map[string]bool{}
	for _, fr := range rep.Findings {
		if fr.InhibitedBy != "" {
			byID[fr.ID] = true
		}
	}
	for _, s := range rep.Signals {
		if byID[findings.ID(snapshot.CanonicalID(s.ResourceID), findings.Category(s.Category), findings.NormalizeKey(string(s.Type)))] {
			held[s.Key()] = true
		}
	}
	return held
}

// recall is the share of the signals not held that a model filed.
func (c Counts) recall() *float64 { return ratio(c.FiledByModel, c.Signals-c.Held) }

// truth is what the ground truth holds on one resource and category.
type truth struct {
	// keys are the keys of the signals and expected findings there.
	keys map[string]bool
	// places is how many model findings it supports: one a key, one a
	// supported entry.
	places int
	// measured is the highest severity rank of the run's signals there;
	// expected the highest of the scenario's expected findings.
	measured, expected int
}

// other is 0 for a key of the truth, 1 for another (a nil truth has none).
func (t *truth) other(key string) int {
	if t != nil && t.keys[key] {
		return 0
	}
	return 1
}

// room is how many model findings the truth supports (none when nil).
func (t *truth) room() int {
	if t == nil {
		return 0
	}
	return t.places
}

func (t *truth) addKey(key string) {
	if !t.keys[key] {
		t.keys[key] = true
		t.places++
	}
}

// ceiling is the most severe rank a model finding may have there: what
// the net measured, else what the scenario expects, else any.
func (t *truth) ceiling() int {
	switch {
	case t == nil:
		return 0
	case t.measured > 0:
		return t.measured
	case t.expected > 0:
		return t.expected
	}
	return signals.SeverityRank(signals.SeverityCritical)
}

// groundTruth gathers the signals of the run (the measurement) and the
// scenario's expected findings and supported pairs.
func groundTruth(rep *patrol.Report, sc *Scenario) map[Pair]*truth {
	out := map[Pair]*truth{}
	at := func(id, category string) *truth {
		p := Pair{snapshot.CanonicalID(id), category}
		if out[p] == nil {
			out[p] = &truth{keys: map[string]bool{}}
		}
		return out[p]
	}
	for _, s := range rep.Signals {
		t := at(s.ResourceID, s.Category)
		t.addKey(findings.NormalizeKey(string(s.Type)))
		t.measured = max(t.measured, signals.SeverityRank(s.Severity))
	}
	for _, fd := range sc.Expect.Findings {
		t := at(fd.ResourceID, fd.Category)
		t.addKey(findings.NormalizeKey(fd.Key))
		t.expected = max(t.expected, signals.SeverityRank(fd.Severity))
	}
	for _, p := range sc.Expect.Supported {
		at(p.ResourceID, p.Category).places++
	}
	return out
}

// sum adds the counters of family name whose labels pass keep.
func sum(mf []*dto.MetricFamily, name string, keep func(map[string]string) bool) float64 {
	total := 0.0
	for _, fam := range mf {
		if fam.GetName() != name {
			continue
		}
		for _, m := range fam.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if keep(labels) {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// meter counts the requests of a run and the largest one, estimated as
// the composer and the providers estimate it, and the usage the provider
// reported: in all, and after the run's first request.
type meter struct {
	p model.Provider

	mu           sync.Mutex
	requests     int
	largest      int
	total, later model.Usage
}

func (m *meter) Name() string { return m.p.Name() }

func (m *meter) Chat(ctx context.Context, req model.Request) (*model.Response, error) {
	n := model.EstimateTokens(req)
	m.mu.Lock()
	m.requests++
	m.largest = max(m.largest, n)
	first := m.requests == 1
	m.mu.Unlock()
	resp, err := m.p.Chat(ctx, req)
	if resp != nil {
		m.mu.Lock()
		m.total = m.total.Add(resp.Usage)
		if !first {
			m.later = m.later.Add(resp.Usage)
		}
		m.mu.Unlock()
	}
	return resp, err
}

func (m *meter) figures() (int, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests, m.largest
}

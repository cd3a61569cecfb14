package patrol

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// execute runs the stages after admission and always leaves a final
// status on rep. The returned error is the cause of an error status.
// The stages read as the run does (docs/PATROL_ARCHITECTURE.md):
//   - collect: the snapshot, its problems, reachability;
//   - detect: the active findings, the net's signals and the forecast;
//   - analyze: the model stages, when a model is configured;
//   - file: what the run observed, the net's unmatched signals first;
//   - commit: inhibition, reconciliation and one transaction.
func (r *Runner) execute(ctx context.Context, set Settings, rep *Report, ro RunOptions) error {
	x := &run{r: r, set: set, rep: rep, ro: ro, start: time.Now()}
	if err := x.collect(ctx); err != nil {
		return err
	}
	if err := x.detect(ctx); err != nil {
		return err
	}
	x.analyze(ctx)
	x.file()
	return x.commit(ctx)
}

// run is one run's state as it passes from stage to stage.
type run struct {
	r     *Runner
	set   Settings
	rep   *Report
	ro    RunOptions
	start time.Time

	// collect
	snap          *snapshot.Snapshot
	problems      []snapshot.Problem
	inScope       map[string]bool
	failedSources []string
	gaps          []snapshot.Problem // the collection's coverage gaps
	complete      bool
	// detect
	withModel    bool
	active       []findings.Finding
	sigs         []signals.Signal
	byID         *resourceIndex
	forecastSeen map[string]bool
	// windows are this run's operation windows (windowsOf).
	windows       []findings.Observation
	windowParents map[string][]string
	// analyze
	an *Analysis
	// file
	obs []findings.Observation
}

func (x *run) elapsed() string { return time.Since(x.start).Round(time.Millisecond).String() }

// collect takes the snapshot and records what is wrong with it. A failed
// collection ends the run: it touches no finding of the fleet but files
// one about patrold itself, since a patrol that cannot see must say so.
func (x *run) collect(ctx context.Context) error {
	r, rep := x.r, x.rep
	var requests atomic.Int64
	snap, problems, err := r.collectWithProgress(snapshot.WithRequestCounter(ctx, &requests), x.set, x.ro, rep.RunID)
	rep.SourceRequests = int(requests.Load())
	if err != nil {
		err = namedTimeout(ctx, err)
		rep.Errors = append(rep.Errors, err.Error())
		rep.addReason(ReasonCollectFailed)
		// A run cancelled from outside (shutdown) is not the source's fault.
		in := &findings.RunInput{Policy: x.set.Publish}
		if !errors.Is(ctx.Err(), context.Canceled) {
			in.Observations = []findings.Observation{sourceFailing(err)}
		}
		if cerr := r.commit(ctx, rep, in, true); cerr != nil {
			return errors.Join(err, cerr)
		}
		return err
	}
	rep.Source = snap.Source
	if len(x.ro.Scope) > 0 {
		snap, x.inScope = scopeSnapshot(snap, x.ro.Scope)
		rep.Scope = &Scope{Resources: canonicalIDs(x.ro.Scope), Reason: x.ro.Reason, Patrolled: len(snap.Resources)}
	}
	if !snap.TakenAt.IsZero() {
		t := snap.TakenAt
		rep.TakenAt = &t
	}
	x.snap, x.problems = snap, problems
	x.recordProblems()
	if x.set.Prober != nil && (x.ro.Snapshot == nil || x.ro.Probe) {
		res := x.set.Prober.Probe(ctx, snap, r.opts.Now())
		rep.Probe = &res
		if res.Incomplete() {
			rep.addReason(ReasonProbeFailed)
		}
	}
	if len(rep.InvalidResources) > 0 {
		rep.addReason(ReasonInvalidResources)
	}
	for k, n := range snap.Counts() {
		rep.Resources[string(k)] = n
	}
	if len(snap.Resources) == 0 {
		rep.addReason(ReasonEmptyScope)
	}
	// A failed source of several leaves the run complete for what the
	// others cover (the checker keeps the absent open); any other reason
	// makes it incomplete.
	x.complete = !slices.ContainsFunc(rep.StatusReasons, func(r string) bool { return r != ReasonSourceFailed })
	rep.partial = len(x.failedSources) > 0
	return nil
}

// recordProblems sorts the collection's problems into the report:
//   - a coverage gap is a finding of its own (coverageGaps), never a
//     failure of the run;
//   - a warning is listed in the report (bounded) and changes nothing;
//   - a source of several that failed whole degrades the run, and what it
//     covers is not resolved by its absence (checker);
//   - a partial source failure (one query) degrades the run and makes it
//     incomplete, and drops nothing;
//   - anything else is an invalid resource.
func (x *run) recordProblems() {
	rep := x.rep
	for _, p := range x.problems {
		switch {
		case p.Gap != nil:
			x.gaps = append(x.gaps, p)
		case p.Warning:
			if len(rep.Warnings) < MaxReportWarnings {
				rep.Warnings = append(rep.Warnings, p)
			} else {
				rep.WarningsDropped++
			}
		case p.SourceFailed():
			rep.Errors = append(rep.Errors, "source "+p.Source+": "+p.Problem)
			rep.addReason(ReasonSourceFailed)
			x.failedSources = append(x.failedSources, p.Source)
		case p.SourceLevel():
			rep.Errors = append(rep.Errors, sourcePrefix(p)+p.Field+": "+p.Problem)
			rep.addReason(ReasonPartialSource)
		default:
			rep.InvalidResources = append(rep.InvalidResources, p)
		}
	}
}

// detect reads the active findings and runs the net over the whole
// snapshot, then the capacity forecast. The model stages need the active
// findings whole; detection needs only their keys.
func (x *run) detect(ctx context.Context) error {
	r, rep := x.r, x.rep
	x.withModel = x.set.Analyst != nil && len(x.snap.Resources) > 0
	load := r.opts.Store.ActiveKeys
	if x.withModel {
		load = r.opts.Store.Active
	}
	active, err := load(ctx)
	if err != nil {
		return r.fail(ctx, rep, fmt.Errorf("load active findings: %w", err))
	}
	x.active = active
	r.log.Info("snapshot collected", "run_id", rep.RunID, "resources", len(x.snap.Resources), "invalid", len(rep.InvalidResources),
		"elapsed", x.elapsed())
	hysteresis := activeSignals(active)
	x.sigs = signals.DetectOpened(x.snap, x.set.Policy, hysteresis, openedSignals(active))
	safeSignalsParallel(x.sigs, r.plain)
	if r.opts.History != nil {
		fc, seen, err := r.forecast(ctx, x.set, x.snap, x.ro.Snapshot == nil, hysteresis)
		if err != nil {
			// No forecast this run, and nothing resolved by absence.
			r.log.Warn("usage history failed", "run_id", rep.RunID, "err", err)
			rep.Errors = append(rep.Errors, "usage history: "+err.Error())
			rep.addReason(ReasonHistoryFailed)
			x.complete = false
		}
		safeSignals(fc, newSafeMemo(r.plain))
		x.sigs, x.forecastSeen = append(x.sigs, fc...), seen
	}
	x.windows, x.windowParents = windowsOf(x.snap.Resources, x.sigs)
	x.byID = newResourceIndex(x.snap, askedIDs(active, x.sigs))
	rep.Signals = x.sigs
	r.log.Info("signals detected", "run_id", rep.RunID, "signals", len(x.sigs), "elapsed", x.elapsed())
	return nil
}

// analyze runs the model stages when a model is configured.
func (x *run) analyze(ctx context.Context) {
	if x.withModel {
		x.an = x.r.analyze(ctx, x.set, x.rep, x.snap, x.sigs, x.active, x.held())
	}
}

// held is the signals a deterministic parent of this run explains, as
// commit's inhibition will decide: the daemon files them held, so the
// model's evaluation pass is not asked about them.
func (x *run) held() map[signals.Key]bool {
	obs := append(observationsFor(x.sigs, x.r.plain), x.windows...)
	findings.Inhibit(obs, x.inhibitionParents(newResourceFacts(x.byID)))
	var out map[signals.Key]bool
	for i := range x.sigs {
		//mutate:held-as-inhibited ./eval ^TestReferenceModels$
		if obs[i].InhibitedBy == "" {
			continue
		}
		if out == nil {
			out = map[signals.Key]bool{}
		}
		out[x.sigs[i].Key()] = true
	}
	return out
}

// inhibitionParents is each resource's parents for inhibition: its
// topology parents, its unroutable networks, then its window.
func (x *run) inhibitionParents(facts *resourceFacts) func(id string) []string {
	return facts.parentsIn(joinParents(unroutableNets(x.rep.Probe), x.windowParents))
}

// file builds the run's observations. Signals no finding of this run
// matched (same resource and key, severity at least the signal's) are
// filed by the daemon; the model's own observations come after them, and
// so do patrold's findings about failed sources and unroutable networks.
func (x *run) file() {
	rep, memo := x.rep, newSafeMemo(x.r.plain)
	var filed []signals.Filed
	if x.an != nil {
		filed = x.an.Filed
	}
	unmatched := x.sigs
	if len(filed) > 0 {
		_, unmatched = signals.Match(x.sigs, filed)
	}
	rep.UnmatchedSignals = slices.Grow(rep.UnmatchedSignals, len(unmatched))
	for i := range unmatched {
		rep.UnmatchedSignals = append(rep.UnmatchedSignals, SignalRef{Type: unmatched[i].Type, ResourceID: unmatched[i].ResourceID})
	}
	obs := observationsFor(unmatched, x.r.plain)
	for i := range unmatched {
		if res := x.byID.get(unmatched[i].ResourceID); res != nil {
			obs[i].ResourceTags = memo.safeNames(res.Tags)
			obs[i].ResourceNode = memo.safeName(nodeOf(res))
		}
	}
	if x.an != nil {
		obs = append(obs, withNodes(modelObservations(x.an.Observations, obs), x.byID, memo)...)
	}
	for _, name := range x.failedSources {
		obs = append(obs, memberFailing(name, x.problems))
	}
	gaps := coverageGaps(x.gaps)
	rep.CoverageGaps = len(gaps)
	obs = append(obs, gaps...)
	if rep.Probe != nil {
		for _, u := range rep.Probe.Unroutable {
			obs = append(obs, networkUnroutable(u))
		}
	}
	obs = append(obs, x.windows...)
	x.obs = obs
}

// commit marks what a parent explains (inhibition), tells reconciliation
// what this run knows, and writes the run in one transaction. From here
// the run reads only the facts of the resources it asked about.
func (x *run) commit(ctx context.Context) error {
	r, rep := x.r, x.rep
	facts := newResourceFacts(x.byID)
	x.snap, x.byID = nil, nil
	// An observation whose cause is a parent's observation of this run,
	// over the snapshot's topology and the unroutable networks, is
	// marked inhibited.
	// A guest's operation window is one of its parents too.
	parents := x.inhibitionParents(facts)
	findings.Inhibit(x.obs, parents)
	if err := ctx.Err(); err != nil {
		return r.fail(ctx, rep, runCtxErr(err))
	}
	cover := failedCover(x.set.Source, x.failedSources)
	// A resource list that hid resources (a coverage gap in the list
	// itself) covers everything absent, as a failed source would.
	//mutate:unlisted-keeps-absent-open ./cmd/patrold ^TestRunHiddenGuestsResolveNothing$
	if slices.ContainsFunc(x.gaps, func(p snapshot.Problem) bool { return p.Gap.Unlisted }) {
		cover = func(string) bool { return true }
	}
	check := checker(facts, detectedKeys(x.sigs), x.forecastSeen, cover, rep.Probe != nil, x.complete)
	in := findings.RunInput{
		Observations: x.obs, Complete: x.complete, Reconcile: true, Check: check, Policy: x.set.Publish,
		// A node offline holds its guests' findings this run cannot
		// evaluate (their metrics or reachability are missing), and an
		// unroutable network its guests' unreachable findings.
		Holds: findings.Holder(x.obs, parents, func(f *findings.Finding) bool { return check(f) == findings.CheckUnknown }),
	}
	if x.inScope != nil {
		in.InScope = func(id string) bool { return x.inScope[id] }
	}
	if x.an != nil {
		in.Resolve = x.an.Resolve
		rep.exchange = x.an.Exchange
	}
	r.log.Info("committing run", "run_id", rep.RunID, "observations", len(x.obs), "elapsed", x.elapsed())
	return r.commit(ctx, rep, &in, false)
}

// analyze runs the model stages. A model failure never fails the run: it
// degrades it, and every signal is still filed deterministically.
func (r *Runner) analyze(ctx context.Context, set Settings, rep *Report, snap *snapshot.Snapshot, sigs []signals.Signal, active []findings.Finding, held map[signals.Key]bool) *Analysis {
	an, err := set.Analyst.Analyze(ctx, AnalysisInput{RunID: rep.RunID, Now: r.opts.Now(), Snapshot: snap, Signals: sigs, Held: held, Active: active, Thresholds: set.Policy})
	if an == nil {
		an = &Analysis{}
	}
	if err != nil {
		an.Errors = append(an.Errors, err.Error())
		if len(an.Reasons) == 0 {
			an.Reasons = append(an.Reasons, ReasonModelFailed)
		}
	}
	rep.Analysis = AnalysisModel
	if set.Model != (ModelRef{}) {
		m := set.Model
		rep.Model = &m
	}
	rep.Usage = an.Usage
	rep.Uncertain = an.Uncertain
	rep.ModelFindingsCapped = an.Capped
	rep.Errors = append(rep.Errors, an.Errors...)
	for _, reason := range an.Reasons {
		rep.addReason(reason)
	}
	return an
}

// collectWithProgress collects, logging every ProgressEvery while the
// collection runs.
func (r *Runner) collectWithProgress(ctx context.Context, set Settings, ro RunOptions, runID string) (*snapshot.Snapshot, []snapshot.Problem, error) {
	done := make(chan struct{})
	defer close(done)
	start := time.Now()
	go func() {
		t := time.NewTicker(r.opts.ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				r.log.Info("collection still running", "run_id", runID, "elapsed", time.Since(start).Round(time.Second).String())
			}
		}
	}()
	return r.collect(ctx, set, ro)
}

func (r *Runner) collect(ctx context.Context, set Settings, ro RunOptions) (*snapshot.Snapshot, []snapshot.Problem, error) {
	if ro.Snapshot != nil {
		return ro.Snapshot, ro.Problems, nil
	}
	if set.Source == nil {
		return nil, nil, errors.New("collect: no source configured")
	}
	snap, problems, err := set.Source.Collect(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("collect: %w", err)
	}
	// A source that builds its resources itself: ids are checked here,
	// as Decode checks a document's.
	problems = snapshot.DropUnfitIDs(snap, problems)
	if snap.TakenAt.IsZero() {
		snap.TakenAt = r.opts.Now()
	}
	return snap, problems, nil
}

// sourcePrefix names the source of several a problem is from ("" with
// one source).
func sourcePrefix(p snapshot.Problem) string {
	if p.Source == "" {
		return ""
	}
	return "source " + p.Source + ": "
}

func runCtxErr(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", ReasonTimeout, err)
	}
	return fmt.Errorf("%s: %w", ReasonCanceled, err)
}

// fail records the run as an error without touching any finding.
func (r *Runner) fail(ctx context.Context, rep *Report, err error) error {
	rep.Errors = append(rep.Errors, err.Error())
	if cerr := r.commit(ctx, rep, nil, true); cerr != nil {
		return errors.Join(err, cerr)
	}
	return err
}

// commit persists the run in one transaction. A failed run writes its run
// record (and completion event) and at most the observations it is given
// (patrold's own finding); it never reconciles, so nothing is resolved.
func (r *Runner) commit(ctx context.Context, rep *Report, in *findings.RunInput, failed bool) error {
	if !failed && ctx.Err() != nil {
		return r.fail(ctx, rep, runCtxErr(ctx.Err()))
	}
	if in == nil {
		in = &findings.RunInput{}
	}
	if failed {
		in.Reconcile, in.Complete = false, false
	}
	now := r.opts.Now()
	in.RunID, in.Now = rep.RunID, now
	// A cancelled run context must not stop us from recording the outcome.
	// The store renders the record while it writes the findings (on
	// another goroutine): the closure fills a copy of the report, which
	// becomes the report once the transaction committed. A report whose
	// commit failed lists no finding of the rolled-back transaction.
	var done *Report
	_, err := r.opts.Store.CommitRun(context.WithoutCancel(ctx), *in, func(changes []findings.Change) (findings.RunRecord, []findings.OutboxDraft, error) {
		out := *rep
		out.FinishedAt = now
		out.DurationMS = now.Sub(out.StartedAt).Milliseconds()
		worst := applyChanges(&out, changes, now)
		out.Status = out.finalStatus(failed, worst)
		done = &out
		return record(&out, in.Complete && !failed && !out.partial)
	})
	if err == nil && done != nil {
		*rep = *done
	}
	if err != nil {
		// The transaction rolled back: record the run as an error now,
		// not at the next start (MarkInterrupted), so status and metrics
		// tell the truth while the daemon keeps running.
		rep.Status = StatusError
		rep.addReason(ReasonCommitFailed)
		rep.Errors = append(rep.Errors, err.Error())
		rec := findings.RunRecord{ID: rep.RunID, Trigger: string(rep.Trigger), Analysis: rep.Analysis, StartedAt: rep.StartedAt}
		if ferr := r.opts.Store.FailRun(context.WithoutCancel(ctx), rec, err, r.opts.Now()); ferr != nil {
			r.log.Error("run commit failed and the run could not be marked error", "run_id", rep.RunID, "err", err, "mark_err", ferr)
		}
		return err
	}
	return nil
}

// applyChanges fills the report's findings and returns the worst severity
// rank of the open findings that count for the status (0 when none). The
// report's lists are sized once; no finding is copied.
func applyChanges(rep *Report, changes []findings.Change, now time.Time) int {
	rep.Findings = slices.Grow(rep.Findings[:0], len(changes))
	rep.Resolved = rep.Resolved[:0]
	rep.inhibited = 0
	worst := 0
	for i := range changes {
		f := &changes[i].Finding
		if f.Active() && f.InhibitedBy != "" {
			rep.inhibited++
		}
		rep.Findings = append(rep.Findings, FindingRef{
			ID: f.ID, Key: f.Key, ResourceID: f.ResourceID, Category: f.Category, Severity: f.Severity,
			State: findings.LoopStateAt(f, now), Source: f.Source, Change: changes[i].Kind, Title: f.Title,
			InhibitedBy: f.InhibitedBy,
		})
		if changes[i].Kind == findings.ChangeResolved {
			rep.Resolved = append(rep.Resolved, f.ID)
		}
		if f.Active() && !f.Suppressed && f.DismissedReason == "" {
			worst = max(worst, f.Severity.Rank())
		}
	}
	return worst
}

func indexResources(snap *snapshot.Snapshot) map[string]*snapshot.Resource {
	byID := make(map[string]*snapshot.Resource, len(snap.Resources))
	for i := range snap.Resources {
		byID[snap.Resources[i].ID] = &snap.Resources[i]
	}
	return byID
}

// resourceIndex finds the resources of a snapshot by id. It indexes, in
// one pass, only the ids the run asks about (the resources of its active
// findings and of its signals). So a large fleet is not indexed whole. An
// id outside that set (a finding activated after the keys were read)
// indexes the whole snapshot, once. Either way get answers as a full
// index would (the last resource with an id wins).
type resourceIndex struct {
	snap  *snapshot.Snapshot
	asked map[string]bool
	byID  map[string]*snapshot.Resource
	full  bool
}

func newResourceIndex(snap *snapshot.Snapshot, asked map[string]bool) *resourceIndex {
	byID := make(map[string]*snapshot.Resource, len(asked))
	for i := range snap.Resources {
		if id := snap.Resources[i].ID; asked[id] {
			byID[id] = &snap.Resources[i]
		}
	}
	return &resourceIndex{snap: snap, asked: asked, byID: byID}
}

func (x *resourceIndex) get(id string) *snapshot.Resource {
	if x.full || x.asked[id] {
		return x.byID[id]
	}
	x.byID, x.full = indexResources(x.snap), true
	return x.byID[id]
}

// askedIDs are the resource ids a run looks up: those of its active
// findings (canonical, as the checker asks) and of its signals.
func askedIDs(active []findings.Finding, sigs []signals.Signal) map[string]bool {
	out := make(map[string]bool, len(active)+len(sigs))
	for i := range active {
		out[snapshot.CanonicalID(active[i].ResourceID)] = true
	}
	for i := range sigs {
		out[sigs[i].ResourceID] = true
	}
	return out
}

// checker tells reconciliation what this run knows about a finding it did
// not observe. Resolution is decided by this run's detection alone: a
// finding whose signal was detected stays open (CheckDetected), and one
// clears only where the detector evaluated the resource and found nothing
// (for capacity_forecast: where the forecast had the history, forecastSeen).
// When a source of several failed, a resource absent from the snapshot
// that it may cover (failed) keeps its finding open. A network's
// finding clears in a run that probed (probed) and did not observe it.
// A finding on a resource the run did not ask about (one activated by
// another writer after the run read the active findings) is unknown:
// this run's detection did not see it, and the next run judges it.
func checker(facts *resourceFacts, detected map[signals.Key]bool, forecastSeen map[string]bool, failed func(id string) bool, probed, complete bool) func(f *findings.Finding) findings.Check {
	return func(f *findings.Finding) findings.Check {
		if f.Key == KeyCoverageGap {
			// A gap resolves when its read succeeds: in a complete run. A
			// node that stopped answering did not read it again.
			//mutate:gap-resolves-when-read ./cmd/patrold ^TestRunCoverageGap$
			if !complete {
				return findings.CheckUnknown
			}
			return findings.CheckCleared
		}
		if f.ResourceID == SourceResourceID || strings.HasPrefix(f.ResourceID, SourceResourceID+"/") {
			// This run collected a snapshot; a source of several that
			// failed again observed its own finding this run.
			return findings.CheckCleared
		}
		if f.Key == findings.KeyNetworkUnroutable && strings.HasPrefix(f.ResourceID, findings.SyntheticResourcePrefix+"network/") {
			if probed {
				return findings.CheckCleared
			}
			return findings.CheckUnknown
		}
		id := snapshot.CanonicalID(f.ResourceID)
		if !facts.asked[id] {
			return findings.CheckUnknown
		}
		res, held := facts.held[id]
		if !held {
			//mutate:failed-source-keeps-absent-open ./patrol ^(TestAFailedSourceNeverResolvesWhatItCovers|TestASourceNeverSeenCoversEverythingAbsent)$
			if failed != nil && failed(id) {
				return findings.CheckUnknown
			}
			return findings.CheckAbsent
		}
		typ, ok := signals.Covering(f.Key, string(f.Category))
		if !ok {
			return findings.CheckPresent
		}
		if detected[signals.Key{Type: typ, ResourceID: id}] {
			return findings.CheckDetected
		}
		if res.evaluated(typ) || (typ == signals.TypeCapacityForecast && forecastSeen[id]) {
			return findings.CheckCleared
		}
		return findings.CheckUnknown
	}
}

// failedCover tells whether a resource id may be one that a failed source
// of several covers: it reported the id when it last collected, or it has
// not collected yet (or cannot tell). nil when no source failed.
func failedCover(src snapshot.Source, failed []string) func(id string) bool {
	if len(failed) == 0 {
		return nil
	}
	cs, ok := src.(snapshot.CoveringSource)
	return func(id string) bool {
		for _, name := range failed {
			if !ok {
				return true
			}
			if covered, known := cs.Covers(name, id); covered || !known {
				return true
			}
		}
		return false
	}
}

// detectedKeys indexes this run's signals by type and canonical resource id.
func detectedKeys(sigs []signals.Signal) map[signals.Key]bool {
	out := make(map[signals.Key]bool, len(sigs))
	for i := range sigs {
		out[signals.Key{Type: sigs[i].Type, ResourceID: snapshot.CanonicalID(sigs[i].ResourceID)}] = true
	}
	return out
}

// modelObservations drops a model observation that names the same finding
// as a deterministic one: that finding's signal was not covered (the
// model filed it below the signal's severity), so the daemon's filing,
// with the signal's severity, is the one recorded.
func modelObservations(model, deterministic []findings.Observation) []findings.Observation {
	if len(deterministic) == 0 {
		return model
	}
	ids := make(map[string]bool, len(deterministic))
	for i := range deterministic {
		ids[deterministic[i].Normalize()] = true
	}
	out := make([]findings.Observation, 0, len(model))
	for _, o := range model {
		if !ids[o.Normalize()] {
			out = append(out, o)
		}
	}
	return out
}

// withNodes gives each model observation without a node the node of its
// resource, as the net's filings carry it (in place).
func withNodes(obs []findings.Observation, byID *resourceIndex, memo safeMemo) []findings.Observation {
	for i := range obs {
		if !obs[i].ResourceNode.Empty() {
			continue
		}
		if res := byID.get(snapshot.CanonicalID(obs[i].ResourceID)); res != nil {
			obs[i].ResourceNode = memo.safeName(nodeOf(res))
		}
	}
	return obs
}

// activeSignals is the hysteresis input: active findings whose key is a
// catalogue signal of the same category.
// openedSignals is when the active findings a rule of duration reads
// opened (updates_pending): the lifecycle's own first detection.
func openedSignals(active []findings.Finding) signals.Opened {
	out := signals.Opened{}
	for i := range active {
		if active[i].DetectedAt.IsZero() {
			continue
		}
		if typ, ok := signals.Covering(active[i].Key, string(active[i].Category)); ok && typ == signals.TypeUpdatesPending {
			out[signals.Key{Type: typ, ResourceID: active[i].ResourceID}] = active[i].DetectedAt
		}
	}
	return out
}

func activeSignals(active []findings.Finding) signals.Active {
	out := make(signals.Active, len(active))
	for i := range active {
		if typ, ok := signals.Covering(active[i].Key, string(active[i].Category)); ok {
			out[signals.Key{Type: typ, ResourceID: active[i].ResourceID}] = true
		}
	}
	return out
}

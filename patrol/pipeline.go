package patrol

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// execute runs the stages after admission and always leaves a final
// status on rep. The returned error is the cause of an error status.
func (r *Runner) execute(ctx context.Context, set Settings, rep *Report, ro RunOptions) error {
	start := time.Now()
	stream := r.streamFor(ctx, set, ro)
	snap, problems, err := r.collectWithProgress(ctx, set, ro, rep.RunID, stream)
	if stream != nil {
		stream.finish() // before the prober writes verdicts into the resources
	}
	if err != nil {
		rep.Errors = append(rep.Errors, err.Error())
		rep.addReason(ReasonCollectFailed)
		// The run fails and touches no finding of the fleet, but patrold
		// files one about itself: a patrol that cannot see must say so.
		// A run cancelled from outside (shutdown) is not the source's fault.
		in := &findings.RunInput{Policy: set.Publish}
		if !errors.Is(ctx.Err(), context.Canceled) {
			in.Observations = []findings.Observation{sourceFailing(err)}
		}
		if cerr := r.commit(ctx, rep, in, true); cerr != nil {
			return errors.Join(err, cerr)
		}
		return err
	}
	rep.Source = snap.Source
	var inScope map[string]bool
	if len(ro.Scope) > 0 {
		snap, inScope = scopeSnapshot(snap, ro.Scope)
		rep.Scope = &Scope{Resources: canonicalIDs(ro.Scope), Reason: ro.Reason, Patrolled: len(snap.Resources)}
	}
	if !snap.TakenAt.IsZero() {
		t := snap.TakenAt
		rep.TakenAt = &t
	}
	// The sources of several that collected nothing this run.
	var failedSources []string
	for _, p := range problems {
		switch {
		case p.Warning:
		case p.SourceFailed():
			// One source of several failed whole: the run is degraded,
			// the others are patrolled, and what the failed one covers
			// is not resolved by its absence (checker).
			rep.Errors = append(rep.Errors, "source "+p.Source+": "+p.Problem)
			rep.addReason(ReasonSourceFailed)
			failedSources = append(failedSources, p.Source)
		case p.SourceLevel():
			// A partial source failure (one query failed): the run is
			// degraded and incomplete, and nothing is dropped for it.
			rep.Errors = append(rep.Errors, sourcePrefix(p)+p.Field+": "+p.Problem)
			rep.addReason(ReasonPartialSource)
		default:
			rep.InvalidResources = append(rep.InvalidResources, p)
		}
	}
	if set.Prober != nil && (ro.Snapshot == nil || ro.Probe) {
		res := set.Prober.Probe(ctx, snap, r.opts.Now())
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
	complete := !slices.ContainsFunc(rep.StatusReasons, func(r string) bool { return r != ReasonSourceFailed })
	rep.partial = len(failedSources) > 0

	// The model stages need the active findings whole; detection needs only
	// their keys, so without a model only the keys are read.
	withModel := set.Analyst != nil && len(snap.Resources) > 0
	load := r.opts.Store.ActiveKeys
	if withModel {
		load = r.opts.Store.Active
	}
	active, err := load(ctx)
	if err != nil {
		return r.fail(ctx, rep, fmt.Errorf("load active findings: %w", err))
	}
	r.log.Info("snapshot collected", "run_id", rep.RunID, "resources", len(snap.Resources), "invalid", len(rep.InvalidResources),
		"elapsed", time.Since(start).Round(time.Millisecond).String())
	hysteresis := activeSignals(active)
	var st streamed
	if stream != nil {
		st, rep.streamed = stream.result(snap, hysteresis, rep.Probe != nil)
	}
	sigs, byID := st.sigs, st.index
	switch {
	case rep.streamed == "" || rep.streamed == streamDiscarded:
		sigs = signals.Detect(snap, set.Policy, hysteresis)
		// The index of the resources the run looks up reads only the
		// signals' resource ids, which neutralising leaves alone: both at
		// once.
		var indexed sync.WaitGroup
		indexed.Go(func() { byID = newResourceIndex(snap, askedIDs(active, sigs)) })
		safeSignalsParallel(sigs, r.plain)
		indexed.Wait()
	case byID == nil:
		byID = newResourceIndex(snap, askedIDs(active, sigs))
	}
	var forecastSeen map[string]bool
	if r.opts.History != nil {
		var fc []signals.Signal
		var err error
		fc, forecastSeen, err = r.forecast(ctx, set, snap, ro.Snapshot == nil, hysteresis)
		if err != nil {
			// No forecast this run, and nothing resolved by absence.
			r.log.Warn("usage history failed", "run_id", rep.RunID, "err", err)
			rep.Errors = append(rep.Errors, "usage history: "+err.Error())
			rep.addReason(ReasonHistoryFailed)
			complete = false
		}
		if len(fc) > 0 {
			safeSignals(fc, newSafeMemo(r.plain))
			sigs = append(sigs, fc...)
			byID = newResourceIndex(snap, askedIDs(active, sigs))
			st.obs = nil // filed below, with the forecast signals
		}
	}
	memo := newSafeMemo(r.plain)
	rep.Signals = sigs
	r.log.Info("signals detected", "run_id", rep.RunID, "signals", len(sigs), "stream", cmp.Or(rep.streamed, "none"),
		"elapsed", time.Since(start).Round(time.Millisecond).String())
	var an *Analysis
	if withModel {
		an = r.analyze(ctx, set, rep, snap, sigs, active)
	}
	// Signals no finding of this run matched (same resource and category,
	// severity at least the signal's) are filed by the daemon.
	var filed []signals.Filed
	if an != nil {
		filed = an.Filed
	}
	// Without a model every signal is unmatched: the signals are read in
	// place, not copied.
	unmatched := sigs
	if len(filed) > 0 {
		_, unmatched = signals.Match(sigs, filed)
	}
	rep.UnmatchedSignals = slices.Grow(rep.UnmatchedSignals, len(unmatched))
	for i := range unmatched {
		rep.UnmatchedSignals = append(rep.UnmatchedSignals, SignalRef{Type: unmatched[i].Type, ResourceID: unmatched[i].ResourceID})
	}
	// Every signal unmatched: filed, tags and all, as the resources
	// streamed past (when they did).
	obs := st.obs
	if len(filed) > 0 || obs == nil {
		obs = observationsFor(unmatched, r.plain)
		for i := range unmatched {
			if res := byID.get(unmatched[i].ResourceID); res != nil {
				obs[i].ResourceTags = memo.safeNames(res.Tags)
				obs[i].ResourceNode = memo.safeName(nodeOf(res))
			}
		}
	}
	if an != nil {
		obs = append(obs, withNodes(modelObservations(an.Observations, obs), byID, memo)...)
	}
	for _, name := range failedSources {
		obs = append(obs, memberFailing(name, problems))
	}
	if rep.Probe != nil {
		for _, u := range rep.Probe.Unroutable {
			obs = append(obs, networkUnroutable(u))
		}
	}
	// The rest of the run reads of the snapshot only the facts of the
	// resources it asked about: without the model stages, the snapshot
	// is garbage from here, and a daemon collects it before the commit.
	facts := newResourceFacts(byID)
	snap, byID, st.index = nil, nil, nil
	if r.opts.CollectBeforeCommit && !withModel {
		runtime.GC()
	}
	// An observation whose cause is a parent's observation of this run,
	// over the snapshot's topology and the unroutable networks, is
	// marked inhibited.
	parents := facts.parentsIn(unroutableNets(rep.Probe))
	findings.Inhibit(obs, parents)
	if err := ctx.Err(); err != nil {
		return r.fail(ctx, rep, runCtxErr(err))
	}
	check := checker(facts, detectedKeys(sigs), forecastSeen, failedCover(set.Source, failedSources), rep.Probe != nil)
	in := findings.RunInput{
		Observations: obs, Complete: complete, Reconcile: true, Check: check, Policy: set.Publish,
		// A node offline holds its guests' findings this run cannot
		// evaluate (their metrics or reachability are missing), and an
		// unroutable network its guests' unreachable findings.
		Holds: findings.Holder(obs, parents, func(f *findings.Finding) bool { return check(f) == findings.CheckUnknown }),
	}
	if inScope != nil {
		in.InScope = func(id string) bool { return inScope[id] }
	}
	if an != nil {
		in.Resolve = an.Resolve
		rep.exchange = an.Exchange
	}
	r.log.Info("committing run", "run_id", rep.RunID, "observations", len(obs), "elapsed", time.Since(start).Round(time.Millisecond).String())
	return r.commit(ctx, rep, &in, false)
}

// analyze runs the model stages. A model failure never fails the run: it
// degrades it, and every signal is still filed deterministically.
func (r *Runner) analyze(ctx context.Context, set Settings, rep *Report, snap *snapshot.Snapshot, sigs []signals.Signal, active []findings.Finding) *Analysis {
	an, err := set.Analyst.Analyze(ctx, AnalysisInput{RunID: rep.RunID, Now: r.opts.Now(), Snapshot: snap, Signals: sigs, Active: active, Thresholds: set.Policy})
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
func (r *Runner) collectWithProgress(ctx context.Context, set Settings, ro RunOptions, runID string, stream *detectStream) (*snapshot.Snapshot, []snapshot.Problem, error) {
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
	return r.collect(ctx, set, ro, stream)
}

// streamFor starts detecting as the source decodes (detectStream), when
// the run collects from a source that can hand its resources over. It is
// nil otherwise: a given snapshot, another source, or active findings
// that cannot be read now. The run then detects after the collection.
func (r *Runner) streamFor(ctx context.Context, set Settings, ro RunOptions) *detectStream {
	if ro.Snapshot != nil || len(ro.Scope) > 0 {
		return nil // a scoped run detects over its scope, after collection
	}
	if _, ok := set.Source.(snapshot.KeptSource); !ok {
		return nil
	}
	active, err := r.opts.Store.ActiveKeys(ctx)
	if err != nil {
		return nil
	}
	return newDetectStream(set.Policy, active, r.plain)
}

func (r *Runner) collect(ctx context.Context, set Settings, ro RunOptions, stream *detectStream) (*snapshot.Snapshot, []snapshot.Problem, error) {
	if ro.Snapshot != nil {
		return ro.Snapshot, ro.Problems, nil
	}
	if set.Source == nil {
		return nil, nil, errors.New("collect: no source configured")
	}
	var snap *snapshot.Snapshot
	var problems []snapshot.Problem
	var err error
	if ks, ok := set.Source.(snapshot.KeptSource); ok && stream != nil {
		snap, problems, err = ks.CollectKept(ctx, stream.kept)
	} else {
		snap, problems, err = set.Source.Collect(ctx)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("collect: %w", err)
	}
	if stream == nil || !isKept(set.Source) {
		// A source that builds its resources itself: ids are checked here,
		// as Decode checks a document's.
		problems = snapshot.DropUnfitIDs(snap, problems)
	}
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

func isKept(src snapshot.Source) bool {
	_, ok := src.(snapshot.KeptSource)
	return ok
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
func checker(facts *resourceFacts, detected map[signals.Key]bool, forecastSeen map[string]bool, failed func(id string) bool, probed bool) func(f *findings.Finding) findings.Check {
	return func(f *findings.Finding) findings.Check {
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
func activeSignals(active []findings.Finding) signals.Active {
	out := make(signals.Active, len(active))
	for i := range active {
		if typ, ok := signals.Covering(active[i].Key, string(active[i].Category)); ok {
			out[signals.Key{Type: typ, ResourceID: active[i].ResourceID}] = true
		}
	}
	return out
}

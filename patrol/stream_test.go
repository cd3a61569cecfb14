package patrol_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/patrold/patrold/alerts"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/demo"
	"github.com/patrold/patrold/snapshot/file"
	"github.com/patrold/patrold/snapshot/probe"
)

// A streaming source lets detection start while the snapshot decodes
// (patrol's detectStream). A document can change its mind after the
// resources were handed over: a later taken_at, a second "resources"
// array, a repeated id that drops earlier copies. The prober writes
// verdicts into resources after they were detected. An operator can
// resolve a finding while the collection runs. Each attack below runs the
// same document through a plain and a streaming source and wants the same
// whole run report, with the signal the late word decides.

// unreachableProber gives every probe candidate the verdict unreachable.
type unreachableProber struct{}

func (unreachableProber) Probe(_ context.Context, snap *snapshot.Snapshot, now time.Time) probe.Result {
	res := probe.Result{At: now}
	no := false
	for i := range snap.Resources {
		r := &snap.Resources[i]
		if !probe.Candidate(r) {
			continue
		}
		res.Guests++
		for _, a := range r.Addresses {
			res.Addresses = append(res.Addresses, probe.Address{ResourceID: r.ID, Address: a, Outcome: probe.OutcomeFailed})
		}
		r.Reachable = &no
		res.Unreachable++
	}
	return res
}

// pair is a collected and a streaming env over the same documents.
type pair struct{ plain, stream *env }

func newPair(t *testing.T, batch int) pair {
	return pair{newEnv(t), newStreamEnv(t, batch)}
}

func (p pair) set(f func(e *env)) { f(p.plain); f(p.stream) }

// run runs both envs on doc and wants the same whole report (the run id
// aside); it returns the streaming run's report.
func (p pair) run(t *testing.T, doc string) *patrol.Report {
	t.Helper()
	p.set(func(e *env) { e.doc = []byte(doc) })
	a, b := p.plain.run(), p.stream.run()
	if patrol.Streamed(a) != "" {
		t.Fatalf("the plain source streamed (%q)", patrol.Streamed(a))
	}
	if ja, jb := reportJSON(t, a), reportJSON(t, b); ja != jb {
		t.Fatalf("a streamed run's report differs from the collected run's\ncollected: %s\n streamed: %s", ja, jb)
	}
	return b
}

func reportJSON(t *testing.T, rep *patrol.Report) string {
	t.Helper()
	r := *rep
	r.RunID = ""
	b, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func signalSet(rep *patrol.Report) []string {
	var out []string
	for _, s := range rep.Signals {
		out = append(out, string(s.Type)+" "+s.ResourceID)
	}
	return out
}

func wantSignals(t *testing.T, rep *patrol.Report, use string, want ...string) {
	t.Helper()
	if got := signalSet(rep); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("signals %q, want %q", got, want)
	}
	if got := patrol.Streamed(rep); got != use {
		t.Errorf("detection used the stream %q, want %q", got, use)
	}
}

const vmDoc = `{"id":"vm/%s","kind":"vm","name":"vm-%s","status":"running","metrics":{"memory_percent":%g}}`

func vm(id string, mem float64) string { return fmt.Sprintf(vmDoc, id, id, mem) }

func TestStreamSeesALateTakenAt(t *testing.T) {
	p := newPair(t, 1)
	late := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	early, success := late.Add(-10*time.Hour), late.Add(-50*time.Hour)
	// 40 hours old at the first taken_at, 50 at the second, which wins:
	// stale (the window is 48 hours).
	backup := fmt.Sprintf(`{"id":"vm/1","kind":"vm","status":"stopped","backup":{"last_success_at":%q}}`, success.Format(time.RFC3339))
	doc := fmt.Sprintf(`{"version":1,"taken_at":%q,"resources":[%s,%s],"taken_at":%q}`,
		early.Format(time.RFC3339), backup, vm("2", 10), late.Format(time.RFC3339))
	wantSignals(t, p.run(t, doc), "partly", "backup_stale vm/1")
}

// A later "resources" array replaces the earlier one: what was made of the
// earlier batches is dropped as the later array starts, and the later
// array's batches are the snapshot's.
func TestStreamSeesASecondResourcesArray(t *testing.T) {
	p := newPair(t, 1)
	doc := fmt.Sprintf(`{"version":1,"taken_at":"2026-11-29T06:00:00Z","resources":[%s,%s],"resources":[%s]}`, vm("1", 10), vm("3", 99), vm("1", 95))
	wantSignals(t, p.run(t, doc), "whole", "high_memory vm/1")
	// A later array with nothing kept holds none of the earlier batches.
	doc = fmt.Sprintf(`{"version":1,"taken_at":"2026-11-29T06:00:00Z","resources":[%s,%s],"resources":[{"id":"x","kind":"toaster"}]}`, vm("1", 95), vm("3", 99))
	wantSignals(t, p.run(t, doc), "discarded")
}

// A source may return one decoding's snapshot and hand over another
// decoding's resources (of as many resources) last: only the decoding
// whose batches the stream took last may be the snapshot's.
func TestStreamSeesAnotherDecodingsBatches(t *testing.T) {
	p := newPair(t, 1)
	swap := fmt.Sprintf(`{"version":1,"taken_at":"2026-11-29T06:00:00Z","resources":[%s,%s]}`, vm("1", 95), vm("2", 10))
	p.set(func(e *env) { e.swap = []byte(swap) })
	doc := fmt.Sprintf(`{"version":1,"taken_at":"2026-11-29T06:00:00Z","resources":[%s,%s]}`, vm("1", 10), vm("2", 95))
	wantSignals(t, p.run(t, doc), "discarded", "high_memory vm/2")
}

func TestStreamSeesDroppedDuplicates(t *testing.T) {
	p := newPair(t, 2)
	doc := fmt.Sprintf(`{"version":1,"taken_at":"2026-11-29T06:00:00Z","resources":[%s,%s,%s]}`, vm("1", 95), vm("2", 95), vm("1", 96))
	wantSignals(t, p.run(t, doc), "discarded", "high_memory vm/2")
}

// quietProber is unreachableProber reporting counts only, no addresses:
// the stream must not depend on what a prober reports.
type quietProber struct{}

func (quietProber) Probe(ctx context.Context, snap *snapshot.Snapshot, now time.Time) probe.Result {
	res := unreachableProber{}.Probe(ctx, snap, now)
	res.Addresses = nil
	return res
}

func TestStreamSeesAProbeVerdict(t *testing.T) {
	for _, prober := range []patrol.Prober{unreachableProber{}, quietProber{}} {
		p := newPair(t, 2)
		p.set(func(e *env) { e.prober = prober })
		probed := `{"id":"vm/1","kind":"vm","status":"running","addresses":["10.0.0.1:22"],"metrics":{"memory_percent":95}}`
		doc := fmt.Sprintf(`{"version":1,"taken_at":"2026-11-29T06:00:00Z","resources":[%s,%s,%s]}`, vm("0", 96), probed, vm("2", 95))
		wantSignals(t, p.run(t, doc), "partly", "high_memory vm/0", "high_memory vm/1", "guest_unreachable vm/1", "high_memory vm/2")
	}
}

func TestStreamSeesALateResolve(t *testing.T) {
	p := newPair(t, 1)
	doc := func(mem float64) string {
		return fmt.Sprintf(`{"version":1,"taken_at":"2026-11-29T06:00:00Z","resources":[%s]}`, vm("1", mem))
	}
	rep := p.run(t, doc(95))
	wantSignals(t, rep, "whole", "high_memory vm/1")
	id := rep.Findings[0].ID
	// 77 is under the trigger (80) and over the clear (75): an active
	// finding holds its signal. An operator resolves the finding while the
	// next collection runs, after the stream read the active findings.
	p.set(func(e *env) {
		e.during = func() {
			e.during = nil
			if _, err := e.store.Act(context.Background(), id, findings.ActionRequest{Action: findings.ActionResolve, Note: "fixed by hand", Actor: "test"}, e.now); err != nil {
				t.Error(err)
			}
		}
	})
	rep = p.run(t, doc(77))
	wantSignals(t, rep, "discarded")
	if f, err := p.stream.store.Get(context.Background(), id); err != nil || f.Status != findings.StatusResolved {
		t.Errorf("the resolved finding: %v, %v (want it resolved still)", f.Status, err)
	}
}

// TestStreamIsDetection holds streamed runs to collected ones over random
// fleets and every late word a document can have: the same whole report,
// run after run, and the same stored findings.
func TestStreamIsDetection(t *testing.T) {
	uses := map[string]int{}
	rapid.Check(t, func(rt *rapid.T) {
		p := newPair(t, rapid.IntRange(1, 7).Draw(rt, "batch"))
		if rapid.Bool().Draw(rt, "prober") {
			p.set(func(e *env) { e.prober = unreachableProber{} })
		}
		for run := range rapid.IntRange(1, 3).Draw(rt, "runs") {
			doc := randomDocument(rt, run)
			p.set(func(e *env) { e.doc = []byte(doc) })
			a, b := p.plain.run(), p.stream.run()
			uses[patrol.Streamed(b)]++
			if ja, jb := reportJSON(t, a), reportJSON(t, b); ja != jb {
				rt.Fatalf("run %d: reports differ\ndocument: %s\ncollected: %s\n streamed: %s", run, doc, ja, jb)
			}
			fa, errA := p.plain.store.List(context.Background(), findings.ListFilter{})
			fb, errB := p.stream.store.List(context.Background(), findings.ListFilter{})
			if errA != nil || errB != nil {
				rt.Fatal(errA, errB)
			}
			for i := range fa { // each run's id is its own (a ULID)
				fa[i].LastRunID = ""
			}
			for i := range fb {
				fb[i].LastRunID = ""
			}
			if ja, jb := mustJSON(rt, fa), mustJSON(rt, fb); ja != jb {
				rt.Fatalf("run %d: stored findings differ\ncollected: %s\n streamed: %s", run, ja, jb)
			}
		}
	})
	// Each way of using the stream was held to the collected run.
	for _, use := range []string{"whole", "partly", "discarded"} {
		if uses[use] == 0 {
			t.Errorf("no run used the stream %q (uses: %v)", use, uses)
		}
	}
}

func mustJSON(rt *rapid.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		rt.Fatal(err)
	}
	return string(b)
}

// randomDocument is a demo fleet, some guests with addresses (probe
// candidates), spelled with the late words a document may have.
func randomDocument(rt *rapid.T, run int) string {
	at := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC).Add(time.Duration(run) * time.Hour)
	fleet := func(label string) []snapshot.Resource {
		o := demo.Options{Seed: rapid.Uint64Range(0, 5).Draw(rt, label+"seed"), Resources: rapid.IntRange(0, 40).Draw(rt, label+"n"),
			FaultRate: rapid.Float64Range(0, 0.6).Draw(rt, label+"faults")}
		if o.Resources == 0 {
			return []snapshot.Resource{}
		}
		rs := demo.Generate(o, at).Resources
		for i := range rs {
			if rs[i].Kind.Guest() && rapid.IntRange(0, 3).Draw(rt, label+"addr") == 0 {
				rs[i].Addresses = []string{"10.0.0.1:22"}
			}
		}
		if n := len(rs); n > 0 && rapid.IntRange(0, 3).Draw(rt, label+"dup") == 0 {
			rs = append(rs, rs[rapid.IntRange(0, n-1).Draw(rt, label+"dupOf")])
		}
		return rs
	}
	res := func(rs []snapshot.Resource) string {
		b, err := json.Marshal(rs)
		if err != nil {
			rt.Fatal(err)
		}
		if rapid.Bool().Draw(rt, "Kind") {
			// v1 matches keys case-folded; the decoder's guess of how many
			// resources there are counts "kind", so the slice grows and
			// the snapshot holds copies of the batches handed over.
			return strings.ReplaceAll(string(b), `"kind":`, `"Kind":`)
		}
		return string(b)
	}
	stamp := func(t time.Time) string { return fmt.Sprintf(`"taken_at":%q`, t.Format(time.RFC3339)) }
	parts := []string{`"version":1`}
	switch rapid.IntRange(0, 4).Draw(rt, "taken_at") {
	case 0: // before the resources, as Encode writes it
		parts = append(parts, stamp(at), `"resources":`+res(fleet("a")))
	case 1: // after them
		parts = append(parts, `"resources":`+res(fleet("a")), stamp(at))
	case 2: // none: the run stamps the collection time
		parts = append(parts, `"resources":`+res(fleet("a")))
	case 3: // two, the later winning
		parts = append(parts, stamp(at.Add(-30*time.Hour)), `"resources":`+res(fleet("a")), stamp(at))
	case 4: // an invalid one, then a valid one
		parts = append(parts, `"taken_at":"yesterday"`, `"resources":`+res(fleet("a")), stamp(at))
	}
	if rapid.IntRange(0, 4).Draw(rt, "second") == 0 {
		parts = append(parts, `"resources":`+res(fleet("b")))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// TestStreamBatchesAreTheDetection: signals.DetectResources over the
// batches a decode hands over, joined, is signals.Detect over the decoded
// snapshot, when it holds them.
func TestStreamBatchesAreTheDetection(t *testing.T) {
	data, err := snapshot.Encode(demo.Generate(demo.Options{Seed: 3, Resources: 5000, FaultRate: 0.2}, time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)))
	if err != nil {
		t.Fatal(err)
	}
	th, err := alerts.New(alerts.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	var batches [][]snapshot.Resource
	var joined []signals.Signal
	var decoding uint64
	snap, _, err := snapshot.Decode(data, snapshot.DecodeOptions{KeptBatch: 100, Kept: func(h snapshot.Handed) {
		batches, decoding = append(batches, h.Resources), h.Decoding
		joined = append(joined, signals.DetectResources(h.Resources, h.TakenAt, th, nil)...)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(batches) != 50 || decoding == 0 || snap.HeldFrom() != decoding {
		t.Fatalf("%d batches of decoding %d, held from %d: want 50, held", len(batches), decoding, snap.HeldFrom())
	}
	whole := signals.Detect(snap, th, nil)
	a, errA := json.Marshal(joined)
	b, errB := json.Marshal(whole)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if len(whole) == 0 || string(a) != string(b) {
		t.Errorf("joined batches give %d signals, the snapshot %d (or they differ)", len(joined), len(whole))
	}
}

// TestStreamSurvivesAGrowingSlice: a file whose resources are smaller
// than the decoder's guess grows the resource slice after batches were
// handed over. So the snapshot holds copies of them. The stream is used
// whole all the same: it keeps positions, not the batches.
func TestStreamSurvivesAGrowingSlice(t *testing.T) {
	var rs []string
	for i := range 3000 {
		rs = append(rs, fmt.Sprintf(`{"id":"vm/%d","kind":"vm","status":"running","metrics":{"memory_percent":%d}}`, i, i%100))
	}
	path := filepath.Join(t.TempDir(), "fleet.json")
	doc := `{"version":1,"taken_at":"2026-11-29T06:00:00Z","resources":[` + strings.Join(rs, ",") + `]}`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := file.New(file.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	var handed int
	var decoding uint64
	snap, _, err := src.CollectKept(context.Background(), func(h snapshot.Handed) { handed, decoding = handed+len(h.Resources), h.Decoding })
	if err != nil || handed != 3000 || decoding == 0 || snap.HeldFrom() != decoding {
		t.Fatalf("%v: %d handed over by decoding %d, held from %d", err, handed, decoding, snap.HeldFrom())
	}
	p := newPair(t, 0)
	rep := p.run(t, doc)
	if patrol.Streamed(rep) != "whole" || len(rep.Signals) != 570 { // memory 81-99 % of every 100
		t.Errorf("a growing slice: stream %q, %d signals; want whole, 570", patrol.Streamed(rep), len(rep.Signals))
	}
}

package patrol

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/demo"
)

// TestEncodeReportIsJSONMarshal holds the run report's hand-written lists
// to encoding/json, byte for byte, over random reports. They hold strings
// that need escaping or are not UTF-8, and floats across the exponent
// forms and not finite. They hold evidence of every kind (those written
// by hand and others, which fall back), and nil and empty lists.
func TestEncodeReportIsJSONMarshal(t *testing.T) {
	text := rapid.OneOf(rapid.String(), rapid.SampledFrom([]string{"", "plain", "a<b>&c", "q\"uote\\", "tab\t\n", "\u2028", "ünï", "\xff\xfe"}),
		rapid.Map(rapid.SliceOf(rapid.Byte()), func(b []byte) string { return string(b) }))
	float := rapid.OneOf(rapid.Float64(), rapid.SampledFrom([]float64{0, 1e-7, 1e21, 95.5, -3, math.Inf(1), math.NaN()}),
		rapid.Map(rapid.Uint64(), math.Float64frombits))
	value := rapid.OneOf(
		rapid.Map(text, func(s string) any { return s }),
		rapid.Map(float, func(f float64) any { return f }),
		rapid.Map(rapid.Int(), func(i int) any { return i }),
		rapid.Map(rapid.Int64(), func(i int64) any { return i }),
		rapid.Map(rapid.Bool(), func(b bool) any { return b }),
		rapid.Just[any](nil),
		rapid.Map(rapid.SliceOf(text), func(s []string) any { return s }),
		rapid.Just[any]([]string(nil)),
		rapid.Just[any](map[string]int{"b": 2, "a": 1}),
		rapid.Just[any](float32(1.5)),
		rapid.Just[any](time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)),
	)
	signal := rapid.Custom(func(rt *rapid.T) signals.Signal {
		s := signals.Signal{Type: signals.Type(text.Draw(rt, "type")), ResourceID: text.Draw(rt, "id"),
			ResourceKind: snapshot.Kind(text.Draw(rt, "kind")), ResourceName: text.Draw(rt, "name"), Severity: text.Draw(rt, "severity"),
			Category: text.Draw(rt, "category"), Value: float.Draw(rt, "value"), Threshold: float.Draw(rt, "threshold"), Summary: text.Draw(rt, "summary")}
		if n := rapid.IntRange(-1, 9).Draw(rt, "evidence"); n >= 0 {
			s.Evidence = map[string]any{}
			for range n {
				s.Evidence[text.Draw(rt, "key")] = value.Draw(rt, "value")
			}
		}
		return s
	})
	list := func(rt *rapid.T, name string, n func(i int)) bool {
		k := rapid.IntRange(-1, 6).Draw(rt, name)
		for i := range k {
			n(i)
		}
		return k >= 0
	}
	rapid.Check(t, func(rt *rapid.T) {
		rep := newReport("r1", TriggerManual, time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
		rep.StatusReasons = []string{text.Draw(rt, "reason")}
		if !list(rt, "signals", func(int) { rep.Signals = append(rep.Signals, signal.Draw(rt, "signal")) }) {
			rep.Signals = nil
		} else if rep.Signals == nil {
			rep.Signals = []signals.Signal{}
		}
		if !list(rt, "unmatched", func(int) {
			rep.UnmatchedSignals = append(rep.UnmatchedSignals, SignalRef{Type: signals.Type(text.Draw(rt, "type")), ResourceID: text.Draw(rt, "id")})
		}) {
			rep.UnmatchedSignals = nil
		}
		if !list(rt, "findings", func(int) {
			rep.Findings = append(rep.Findings, FindingRef{ID: text.Draw(rt, "id"), Key: text.Draw(rt, "key"), ResourceID: text.Draw(rt, "rid"),
				Category: findings.Category(text.Draw(rt, "cat")), Severity: findings.Severity(text.Draw(rt, "sev")), State: text.Draw(rt, "state"),
				Source: findings.Source(text.Draw(rt, "source")), Change: findings.ChangeKind(text.Draw(rt, "change")), Title: text.Draw(rt, "title"),
				InhibitedBy: text.Draw(rt, "inhibited_by")})
		}) {
			rep.Findings = nil
		}
		want, werr := json.Marshal(rep)
		got, gerr := encodeReport(rep)
		if (werr == nil) != (gerr == nil) || string(got) != string(want) {
			rt.Fatalf("encodeReport differs from json.Marshal:\ngot  %s (%v)\nwant %s (%v)", got, gerr, want, werr)
		}
	})
}

// TestEncodeReportWritesDetectorSignalsByHand: the signals detectors make
// (here of the example fleet) take the hand-written path, not the
// fallback, and still encode as json.Marshal does.
func TestEncodeReportWritesDetectorSignalsByHand(t *testing.T) {
	ex, err := exampleSignals()
	if err != nil {
		t.Fatal(err)
	}
	rep := newReport("r1", TriggerManual, time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	rep.Signals = ex
	for _, s := range ex {
		rep.UnmatchedSignals = append(rep.UnmatchedSignals, SignalRef{Type: s.Type, ResourceID: s.ResourceID})
	}
	if len(ex) < 5 {
		t.Fatalf("the example fleet gave %d signals", len(ex))
	}
	if _, ok := appendReportLists(nil, rep); !ok {
		t.Fatal("detector signals fell back to encoding/json")
	}
	want, _ := json.Marshal(rep)
	if got, err := encodeReport(rep); err != nil || string(got) != string(want) {
		t.Fatalf("encodeReport:\ngot  %s (%v)\nwant %s", got, err, want)
	}
}

// exampleSignals are the signals of the example fleet and of the hostile
// fleet of the attack tests, neutralised as a run does.
func exampleSignals() ([]signals.Signal, error) {
	pol, err := alerts.New(alerts.Settings{})
	if err != nil {
		return nil, err
	}
	var out []signals.Signal
	for _, path := range []string{filepath.Join("..", "examples", "small-faults.json"), filepath.Join("testdata", "attacks", "hostile-fleet.json")} {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		snap, _, err := snapshot.Decode(data, snapshot.DecodeOptions{})
		if err != nil {
			return nil, err
		}
		sigs := signals.Detect(snap, pol, nil)
		safeSignalsParallel(sigs, nil)
		out = append(out, sigs...)
	}
	return out, nil
}

// BenchmarkEncodeReport encodes the run report of a 100k-resource fleet at
// 10 % faults (about 11k signals and findings): encodeReport against
// json.Marshal of the same report.
func BenchmarkEncodeReport(b *testing.B) {
	pol, _ := alerts.New(alerts.Settings{})
	snap := demo.Generate(demo.Options{Seed: 1, Resources: 100_000, FaultRate: 0.1}, time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC))
	rep := newReport("r1", TriggerManual, time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	rep.Signals = signals.Detect(snap, pol, nil)
	safeSignalsParallel(rep.Signals, nil)
	for _, s := range rep.Signals {
		rep.UnmatchedSignals = append(rep.UnmatchedSignals, SignalRef{Type: s.Type, ResourceID: s.ResourceID})
		rep.Findings = append(rep.Findings, FindingRef{ID: "0123456789abcdef", Key: string(s.Type), ResourceID: s.ResourceID,
			Category: findings.Category(s.Category), Severity: findings.Severity(s.Severity), State: "active", Source: findings.SourceDeterministic,
			Change: findings.ChangeUnchanged, Title: "High CPU on " + s.ResourceName})
	}
	for _, c := range []struct {
		name string
		enc  func(*Report) ([]byte, error)
	}{{"hand", encodeReport}, {"encoding_json", func(r *Report) ([]byte, error) { return json.Marshal(r) }}} {
		b.Run(c.name, func(b *testing.B) {
			data, _ := c.enc(rep)
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := c.enc(rep); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

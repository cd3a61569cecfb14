package signals

import (
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"
)

// TestMetricSummaryIsSprintf holds metricSummary to the fmt.Sprintf forms
// it replaces, over random values (negative, huge, tiny, not finite) and
// texts with verbs in them.
func TestMetricSummaryIsSprintf(t *testing.T) {
	float := rapid.OneOf(rapid.Float64(), rapid.Float64Range(-1e3, 1e3), rapid.SampledFrom([]float64{0, 90, 95.25, 99.95, 1e21, 1e-7, math.Inf(1), math.NaN()}),
		rapid.Map(rapid.Uint64(), math.Float64frombits))
	rapid.Check(t, func(rt *rapid.T) {
		kind, label, name, how := rapid.String().Draw(rt, "kind"), rapid.String().Draw(rt, "label"), rapid.String().Draw(rt, "name"), rapid.SampledFrom([]string{"current", "sustained", "50%s %d"}).Draw(rt, "how")
		v, threshold, clear, trigger := float.Draw(rt, "v"), float.Draw(rt, "threshold"), float.Draw(rt, "clear"), float.Draw(rt, "trigger")
		want := fmt.Sprintf("%s %s on %s at %.1f%% (%s), above %g", kind, label, name, v, how, threshold)
		if got := metricSummary(kind, label, name, v, how, false, threshold, clear, trigger); got != want {
			rt.Fatalf("metricSummary = %q, want %q", got, want)
		}
		want = fmt.Sprintf("%s %s on %s at %.1f%% (%s), still above clear %g after exceeding %g", kind, label, name, v, how, clear, trigger)
		if got := metricSummary(kind, label, name, v, how, true, threshold, clear, trigger); got != want {
			rt.Fatalf("held metricSummary = %q, want %q", got, want)
		}
	})
}

package metricsreg_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/patrold/patrold/internal/metricsreg"
)

func TestRegisterReusesExisting(t *testing.T) {
	reg := prometheus.NewRegistry()
	newVec := func() *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "x"}, []string{"l"})
	}
	a, err := metricsreg.Register(reg, newVec())
	if err != nil {
		t.Fatal(err)
	}
	b, err := metricsreg.Register(reg, newVec())
	if err != nil || a != b {
		t.Fatalf("second registration did not reuse the first: %v %v", err, a == b)
	}
	b.WithLabelValues("v").Inc()
	if got := testutil.ToFloat64(a.WithLabelValues("v")); got != 1 {
		t.Fatalf("counted %v into the registered collector", got)
	}
	clash := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x_total", Help: "other"})
	if _, err := metricsreg.Register(reg, clash); err == nil {
		t.Fatal("a different collector under the same name was accepted")
	}
	if c, err := metricsreg.Register[prometheus.Gauge](nil, clash); err != nil || c != clash {
		t.Fatal("nil registerer")
	}
}

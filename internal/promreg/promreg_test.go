package promreg_test

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/internal/promreg"
)

func TestRegister(t *testing.T) {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "patrold_test_total", Help: "test"})
	if err := promreg.Register(nil, c); err != nil {
		t.Fatalf("nil registry: %v", err)
	}
	reg := prometheus.NewRegistry()
	if err := promreg.Register(reg, c); err != nil {
		t.Fatal(err)
	}
	err := promreg.Register(reg, c)
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) || err.Error() != "register metrics: duplicate metrics collector registration attempted" {
		t.Fatalf("second registration: %v", err)
	}
}

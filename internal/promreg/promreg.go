// Package promreg registers a component's collectors on a registry (nil:
// none), the one way every source and the prober register theirs.
package promreg

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers each collector on reg; nil reg registers nothing. A
// second registration of the same collectors is an error, so a component's
// metrics are built once per registry and shared (its Options.Metrics).
func Register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register metrics: %w", err)
		}
	}
	return nil
}

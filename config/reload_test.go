package config

import (
	"errors"
	"slices"
	"testing"
)

func mustLoad(t *testing.T, yaml string) *Config {
	t.Helper()
	cfg, err := Load([]byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestReloaderKeepsTheOldConfigOnError: a failed load or a refused apply
// leaves the configuration in force as it was; a good one replaces it and
// names the keys that need a restart.
func TestReloaderKeepsTheOldConfigOnError(t *testing.T) {
	old := mustLoad(t, "schedule: {cron: '@every 1h'}\n")
	next := mustLoad(t, "schedule: {cron: '@every 2h'}\nhttp: {listen: '127.0.0.1:1'}\nlog: {level: debug}\n")
	var loadErr, applyErr error
	var applied []*Config
	r := NewReloader(old, func() (*Config, error) { return next, loadErr },
		func(c *Config) error { applied = append(applied, c); return applyErr }, nil)

	loadErr = errors.New("patrold.yaml: bad")
	if err := r.Reload(); !errors.Is(err, loadErr) || r.Current() != old || len(applied) != 0 {
		t.Fatalf("failed load: %v, current changed: %v, applied %d", err, r.Current() != old, len(applied))
	}
	loadErr, applyErr = nil, errors.New("source.kind: bad")
	if err := r.Reload(); !errors.Is(err, applyErr) || r.Current() != old {
		t.Fatalf("refused apply: %v, current changed: %v", err, r.Current() != old)
	}
	applyErr = nil
	if err := r.Reload(); err != nil || r.Current() != next {
		t.Fatalf("good reload: %v, current is next: %v", err, r.Current() == next)
	}
	if got, want := RestartKeys(old, next), []string{"http.listen", "log"}; !slices.Equal(got, want) {
		t.Fatalf("restart keys %v, want %v", got, want)
	}
	if got := RestartKeys(old, old); len(got) != 0 {
		t.Fatalf("restart keys of an unchanged config: %v", got)
	}
}

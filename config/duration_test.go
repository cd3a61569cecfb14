package config_test

import (
	"testing"
	"time"

	"github.com/patrold/patrold/config"
)

// TestDurations feeds duration values through config.Load, from YAML and
// from PATROLD_* variables, and compares whole errors or values.
func TestDurations(t *testing.T) {
	const noUnit = "invalid configuration: schedule.startup_delay: a duration needs a unit (30s, 5m, 2h, 7d)"
	cases := []struct {
		yaml, env string
		want      time.Duration
		err       string
	}{
		{yaml: "30", env: "30", err: noUnit},
		{yaml: "0", env: "0", err: noUnit},
		{yaml: "-30", env: "-30", err: noUnit},
		{yaml: "1.5", env: "1.5", err: noUnit},
		{yaml: "1e3", env: "1e3", err: noUnit},
		{yaml: "'30'", env: " 30 ", err: noUnit},
		{yaml: "30x", env: "30x", err: `invalid configuration: schedule.startup_delay: invalid duration "30x" (use 30s, 5m, 2h, 7d)`},
		{yaml: "soon", env: "soon", err: `invalid configuration: schedule.startup_delay: invalid duration "soon" (use 30s, 5m, 2h, 7d)`},
		{yaml: "''", env: "", err: `invalid configuration: schedule.startup_delay: invalid duration "" (use 30s, 5m, 2h, 7d)`},
		{yaml: "30s", env: "30s", want: 30 * time.Second},
		{yaml: "0s", env: "0s", want: 0},
		{yaml: "5m", env: "5m", want: 5 * time.Minute},
		{yaml: "2h", env: "2h", want: 2 * time.Hour},
		{yaml: "30d", env: "30d", want: 30 * 24 * time.Hour},
		{yaml: "1d12h", env: "1d12h", want: 36 * time.Hour},
		{yaml: "1.5d", env: "1.5d", want: 36 * time.Hour},
		{yaml: "1h30m", env: "1h30m", want: 90 * time.Minute},
	}
	for _, c := range cases {
		cfg, err := config.Load([]byte("schedule: {startup_delay: "+c.yaml+"}\n"), nil)
		check(t, "yaml "+c.yaml, cfg, err, c.want, c.err)
		cfg, err = config.Load(nil, []string{"PATROLD_SCHEDULE_STARTUP_DELAY=" + c.env})
		check(t, "env "+c.env, cfg, err, c.want, c.err)
	}
}

func check(t *testing.T, name string, cfg *config.Config, err error, want time.Duration, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || err.Error() != wantErr {
			t.Errorf("%s: error %v, want %q", name, err, wantErr)
		}
		return
	}
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	if cfg.Schedule.StartupDelay != want {
		t.Errorf("%s: %v, want %v", name, cfg.Schedule.StartupDelay, want)
	}
}

// TestDurationsEveryKey refuses a bare number in every duration key of
// the run schedule and names the key, not only the first one.
func TestDurationsEveryKey(t *testing.T) {
	_, err := config.Load([]byte("schedule: {run_timeout: 600, skip_startup_if_recent: 3600}\nretention: {}\n"), nil)
	want := "invalid configuration:\n" +
		"  schedule.run_timeout: a duration needs a unit (30s, 5m, 2h, 7d)\n" +
		"  schedule.skip_startup_if_recent: a duration needs a unit (30s, 5m, 2h, 7d)"
	if err == nil || err.Error() != want {
		t.Fatalf("error:\n%v\nwant:\n%s", err, want)
	}
}

// TestDurationDays gives a retention key in days, where they are natural.
func TestDurationDays(t *testing.T) {
	cfg, err := config.Load([]byte("retention: {runs: 30d}\n"), []string{"PATROLD_RETENTION_AUDIT=90d"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Retention.Runs != 30*24*time.Hour || cfg.Retention.Audit != 90*24*time.Hour {
		t.Fatalf("retention: %+v", cfg.Retention)
	}
}

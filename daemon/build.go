// Package daemon wires every component from a config.Config, starts them
// and stops them in reverse order. It holds no domain rules.
package daemon

import (
	"context"

	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	"path/filepath"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/demo"
	"github.com/patrold/patrold/snapshot/exec"
	"github.com/patrold/patrold/snapshot/file"
	"github.com/patrold/patrold/snapshot/probe"
	promsource "github.com/patrold/patrold/snapshot/prometheus"
	"github.com/patrold/patrold/snapshot/proxmox"
	"github.com/patrold/patrold/store"
)

// DBFile is the SQLite database under data_dir.
const DBFile = "patrold.db"

// DBPath returns the database path for cfg.
func DBPath(cfg *config.Config) string { return filepath.Join(cfg.DataDir, DBFile) }

// OpenStore opens the findings store under cfg.DataDir.
func OpenStore(ctx context.Context, cfg *config.Config) (*store.Store, error) {
	return store.Open(ctx, DBPath(cfg))
}

// NewSource builds the configured snapshot source; reg (may be nil)
// receives its metrics.
func NewSource(cfg *config.Config, now func() time.Time, reg prometheus.Registerer) (snapshot.Source, error) {
	switch cfg.Source.Kind {
	case "demo":
		return demo.New(cfg.Source.Demo, now)
	case "file":
		return file.New(cfg.Source.File)
	case "exec":
		return exec.New(cfg.Source.Exec)
	case "prometheus":
		o := cfg.Source.Prometheus
		o.Registerer = reg
		return promsource.New(o)
	case "proxmox":
		o := cfg.Source.Proxmox
		o.Now, o.Registerer = now, reg
		return proxmox.New(o)
	}
	return nil, fmt.Errorf("source.kind: %q is not one of demo, file, exec, prometheus, proxmox", cfg.Source.Kind)
}

// PublishPolicy derives the findings publish policy from cfg.
func PublishPolicy(cfg *config.Config) findings.PublishPolicy {
	return findings.PublishPolicy{RepeatInterval: cfg.Findings.RepeatInterval, FlapWindow: cfg.Findings.Flap.Window, FlapMaxTransitions: cfg.Findings.Flap.MaxTransitions}
}

// RunSettings derives the per-run settings from cfg; reg (may be nil)
// receives the source's and prober's metrics.
func RunSettings(cfg *config.Config, now func() time.Time, reg prometheus.Registerer) (patrol.Settings, error) {
	pol, err := alerts.New(cfg.Alerts)
	if err != nil {
		return patrol.Settings{}, err
	}
	src, err := NewSource(cfg, now, reg)
	if err != nil {
		return patrol.Settings{}, err
	}
	po := cfg.Source.Probe
	po.Registerer = reg
	prober, err := probe.New(po)
	if err != nil {
		return patrol.Settings{}, err
	}
	return patrol.Settings{
		Policy: pol, Publish: PublishPolicy(cfg), Source: src, Prober: prober, Timeout: cfg.Schedule.RunTimeout,
		Autonomy: findings.Autonomy(cfg.Patrol.Autonomy), Gate: Gate(cfg), ResolvedRetention: cfg.Findings.ResolvedRetention,
		Retention: cfg.Retention,
	}, nil
}

// Gate derives the investigation gate from cfg: the one place its numbers
// are read.
func Gate(cfg *config.Config) findings.Gate {
	inv := cfg.Investigation
	return findings.Gate{MaxAttempts: inv.MaxAttempts, Cooldown: inv.Cooldown, TimeoutCooldown: inv.TimeoutCooldown,
		FixRetryCooldown: inv.FixRetryCooldown, Timeout: inv.Timeout, MaxConcurrent: inv.MaxConcurrent}
}

// CheckFiles reads what serve reads from files besides the configuration
// (token files, the configured source and model), so `config check`
// refuses what serve would refuse, naming the key.
func CheckFiles(cfg *config.Config) error {
	if _, err := api.TokensFromConfig(cfg.HTTP.Tokens); err != nil {
		return err
	}
	if _, err := RunSettings(cfg, time.Now, nil); err != nil {
		return err
	}
	_, err := NewShared(cfg, nil, nil)
	return err
}

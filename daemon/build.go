// Package daemon wires every component from a config.Config, starts them
// and stops them in reverse order. It holds no domain rules.
package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/demo"
	"github.com/patrold/patrold/snapshot/file"
)

// DBFile is the SQLite database under data_dir.
const DBFile = "patrold.db"

// DBPath returns the database path for cfg.
func DBPath(cfg *config.Config) string { return filepath.Join(cfg.DataDir, DBFile) }

// OpenStore opens the findings store under cfg.DataDir.
func OpenStore(ctx context.Context, cfg *config.Config) (*findings.Store, error) {
	return findings.Open(ctx, DBPath(cfg))
}

// NewSource builds the configured snapshot source.
func NewSource(cfg *config.Config, now func() time.Time) (snapshot.Source, error) {
	switch cfg.Source.Kind {
	case "demo":
		return demo.New(cfg.Source.Demo, now)
	case "file":
		return file.New(cfg.Source.File)
	}
	return nil, fmt.Errorf("source.kind: %q is not available in this build", cfg.Source.Kind)
}

// PublishPolicy derives the findings publish policy from cfg.
func PublishPolicy(cfg *config.Config) findings.PublishPolicy {
	return findings.PublishPolicy{RepeatInterval: cfg.Findings.RepeatInterval, FlapWindow: cfg.Findings.Flap.Window, FlapMaxTransitions: cfg.Findings.Flap.MaxTransitions}
}

// RunSettings derives the per-run settings from cfg.
func RunSettings(cfg *config.Config, now func() time.Time) (patrol.Settings, error) {
	pol, err := alerts.New(cfg.Alerts)
	if err != nil {
		return patrol.Settings{}, err
	}
	src, err := NewSource(cfg, now)
	if err != nil {
		return patrol.Settings{}, err
	}
	return patrol.Settings{
		Policy: pol, Publish: PublishPolicy(cfg), Source: src, Timeout: cfg.Schedule.RunTimeout,
		Autonomy: findings.Autonomy(cfg.Patrol.Autonomy), Gate: Gate(cfg), ResolvedRetention: cfg.Findings.ResolvedRetention,
	}, nil
}

// Gate derives the investigation gate from cfg: the one place its numbers
// are read.
func Gate(cfg *config.Config) findings.Gate {
	inv := cfg.Investigation
	return findings.Gate{MaxAttempts: inv.MaxAttempts, Cooldown: inv.Cooldown, TimeoutCooldown: inv.TimeoutCooldown,
		FixRetryCooldown: inv.FixRetryCooldown, Timeout: inv.Timeout, MaxConcurrent: inv.MaxConcurrent}
}

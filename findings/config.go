package findings

import (
	"time"

	"github.com/patrold/patrold/internal/confcheck"
)

// Config is the findings section: how long resolved findings are kept
// and the publish policy.
type Config struct {
	ResolvedRetention time.Duration `koanf:"resolved_retention" yaml:"resolved_retention"`
	RepeatInterval    time.Duration `koanf:"repeat_interval" yaml:"repeat_interval"`
	Flap              FlapConfig    `koanf:"flap" yaml:"flap"`
}

// FlapConfig is findings.flap: flapping detection.
type FlapConfig struct {
	Window         time.Duration `koanf:"window" yaml:"window"`
	MaxTransitions int           `koanf:"max_transitions" yaml:"max_transitions"`
}

// DefaultResolvedRetention keeps resolved findings as history for 30
// days.
const DefaultResolvedRetention = 720 * time.Hour

// DefaultConfig is the findings section's defaults.
func DefaultConfig() Config {
	return Config{ResolvedRetention: DefaultResolvedRetention, RepeatInterval: DefaultRepeatInterval,
		Flap: FlapConfig{Window: DefaultFlapWindow, MaxTransitions: DefaultFlapMaxTransitions}}
}

// Validate reports every problem, each naming its key under findings.
func (c Config) Validate() error {
	var p confcheck.Problems
	p.Positive("findings.resolved_retention", c.ResolvedRetention)
	p.Positive("findings.repeat_interval", c.RepeatInterval)
	p.Positive("findings.flap.window", c.Flap.Window)
	p.AtLeastOne("findings.flap.max_transitions", c.Flap.MaxTransitions)
	return p.Error()
}

// Policy is the publish policy the section sets.
func (c Config) Policy() PublishPolicy {
	return PublishPolicy{RepeatInterval: c.RepeatInterval, FlapWindow: c.Flap.Window, FlapMaxTransitions: c.Flap.MaxTransitions}
}

// InvestigationConfig is the investigation section: the gate's limits
// and each investigation's bounds.
type InvestigationConfig struct {
	MaxAttempts      int           `koanf:"max_attempts" yaml:"max_attempts"`
	Cooldown         time.Duration `koanf:"cooldown" yaml:"cooldown"`
	TimeoutCooldown  time.Duration `koanf:"timeout_cooldown" yaml:"timeout_cooldown"`
	FixRetryCooldown time.Duration `koanf:"fix_retry_cooldown" yaml:"fix_retry_cooldown"`
	Timeout          time.Duration `koanf:"timeout" yaml:"timeout"`
	MaxConcurrent    int           `koanf:"max_concurrent" yaml:"max_concurrent"`
	// EvidenceBudget bounds the evidence calls of one investigation.
	EvidenceBudget int `koanf:"evidence_budget" yaml:"evidence_budget"`
}

// DefaultEvidenceBudget is investigation.evidence_budget's default.
const DefaultEvidenceBudget = 10

// DefaultInvestigationConfig is the investigation section's defaults.
func DefaultInvestigationConfig() InvestigationConfig {
	g := DefaultGate()
	return InvestigationConfig{MaxAttempts: g.MaxAttempts, Cooldown: g.Cooldown, TimeoutCooldown: g.TimeoutCooldown,
		FixRetryCooldown: g.FixRetryCooldown, Timeout: g.Timeout, MaxConcurrent: g.MaxConcurrent, EvidenceBudget: DefaultEvidenceBudget}
}

// Validate reports every problem, each naming its key under
// investigation.
func (c InvestigationConfig) Validate() error {
	var p confcheck.Problems
	p.AtLeastOne("investigation.max_attempts", c.MaxAttempts)
	p.Positive("investigation.cooldown", c.Cooldown)
	p.Positive("investigation.timeout_cooldown", c.TimeoutCooldown)
	p.Positive("investigation.fix_retry_cooldown", c.FixRetryCooldown)
	p.Positive("investigation.timeout", c.Timeout)
	p.AtLeastOne("investigation.max_concurrent", c.MaxConcurrent)
	p.AtLeastOne("investigation.evidence_budget", c.EvidenceBudget)
	return p.Error()
}

// Gate is the investigation gate the section sets.
func (c InvestigationConfig) Gate() Gate {
	return Gate{MaxAttempts: c.MaxAttempts, Cooldown: c.Cooldown, TimeoutCooldown: c.TimeoutCooldown,
		FixRetryCooldown: c.FixRetryCooldown, Timeout: c.Timeout, MaxConcurrent: c.MaxConcurrent}
}

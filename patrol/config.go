package patrol

import (
	"fmt"
	"time"

	"github.com/patrold/patrold/internal/confcheck"
)

// ScheduleConfig is the schedule section: when runs happen.
type ScheduleConfig struct {
	Cron                string        `koanf:"cron" yaml:"cron"`
	StartupDelay        time.Duration `koanf:"startup_delay" yaml:"startup_delay"`
	SkipStartupIfRecent time.Duration `koanf:"skip_startup_if_recent" yaml:"skip_startup_if_recent"`
	RunTimeout          time.Duration `koanf:"run_timeout" yaml:"run_timeout"`
	DrainTimeout        time.Duration `koanf:"drain_timeout" yaml:"drain_timeout"`
}

// DefaultScheduleConfig is the schedule section's defaults.
func DefaultScheduleConfig() ScheduleConfig {
	return ScheduleConfig{Cron: "@every 6h", StartupDelay: 30 * time.Second, SkipStartupIfRecent: time.Hour,
		RunTimeout: 20 * time.Minute, DrainTimeout: 30 * time.Second}
}

// Validate reports every problem, each naming its key under schedule.
func (c ScheduleConfig) Validate() error {
	var p confcheck.Problems
	if _, err := cronParser.Parse(c.Cron); err != nil {
		p.Add("schedule.cron", fmt.Sprintf("%q: %v", c.Cron, err))
	}
	p.NonNegative("schedule.startup_delay", c.StartupDelay)
	p.NonNegative("schedule.skip_startup_if_recent", c.SkipStartupIfRecent)
	p.Positive("schedule.run_timeout", c.RunTimeout)
	p.Positive("schedule.drain_timeout", c.DrainTimeout)
	return p.Error()
}

// Config is the patrol section.
type Config struct {
	Autonomy      string              `koanf:"autonomy" yaml:"autonomy"` // monitor | approval | assisted | full
	ModelFindings ModelFindingsConfig `koanf:"model_findings" yaml:"model_findings"`
}

// ModelFindingsConfig bounds the model findings one run files; the rest
// are refused, counted and reported.
type ModelFindingsConfig struct {
	MaxPerRun      int `koanf:"max_per_run" yaml:"max_per_run"`
	MaxPerResource int `koanf:"max_per_resource" yaml:"max_per_resource"`
}

// DefaultConfig is the patrol section's defaults.
func DefaultConfig() Config {
	return Config{Autonomy: "monitor", ModelFindings: ModelFindingsConfig{MaxPerRun: 25, MaxPerResource: 3}}
}

// Validate reports every problem, each naming its key under patrol.
func (c Config) Validate() error {
	var p confcheck.Problems
	p.OneOf("patrol.autonomy", c.Autonomy, "monitor", "approval", "assisted", "full")
	p.AtLeastOne("patrol.model_findings.max_per_run", c.ModelFindings.MaxPerRun)
	p.AtLeastOne("patrol.model_findings.max_per_resource", c.ModelFindings.MaxPerResource)
	return p.Error()
}

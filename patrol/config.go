package patrol

import (
	"fmt"
	"strings"
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
	Triggers      TriggerConfig       `koanf:"triggers" yaml:"triggers"`
}

// TriggerConfig sets the limits of the runs alerts ask for (Triggers)
// and how an alert's labels name resources. Read at start.
type TriggerConfig struct {
	PerResource time.Duration `koanf:"per_resource" yaml:"per_resource"`
	Global      time.Duration `koanf:"global" yaml:"global"`
	AlertLabels []AlertLabel  `koanf:"alert_labels" yaml:"alert_labels"`
}

// AlertLabel maps one alert label to a resource id: in ID, {value} is
// the label's value and {host} its host without a port.
type AlertLabel struct {
	Label string `koanf:"label" yaml:"label" json:"label"`
	ID    string `koanf:"id" yaml:"id" json:"id"`
}

// DefaultAlertLabels are tried in order; an alert names the resource of
// the first label it carries.
func DefaultAlertLabels() []AlertLabel {
	return []AlertLabel{{Label: "resource_id", ID: "{value}"}, {Label: "node", ID: "node/{value}"}, {Label: "instance", ID: "node/{host}"}}
}

// ModelFindingsConfig bounds the model findings one run files; the rest
// are refused, counted and reported.
type ModelFindingsConfig struct {
	MaxPerRun      int `koanf:"max_per_run" yaml:"max_per_run"`
	MaxPerResource int `koanf:"max_per_resource" yaml:"max_per_resource"`
}

// DefaultConfig is the patrol section's defaults.
func DefaultConfig() Config {
	return Config{Autonomy: "monitor", ModelFindings: ModelFindingsConfig{MaxPerRun: 25, MaxPerResource: 3},
		Triggers: TriggerConfig{PerResource: DefaultTriggerPerResource, Global: DefaultTriggerGlobal, AlertLabels: DefaultAlertLabels()}}
}

// Validate reports every problem, each naming its key under patrol.
func (c Config) Validate() error {
	var p confcheck.Problems
	p.OneOf("patrol.autonomy", c.Autonomy, "monitor", "approval", "assisted", "full")
	p.AtLeastOne("patrol.model_findings.max_per_run", c.ModelFindings.MaxPerRun)
	p.AtLeastOne("patrol.model_findings.max_per_resource", c.ModelFindings.MaxPerResource)
	p.Positive("patrol.triggers.per_resource", c.Triggers.PerResource)
	p.Positive("patrol.triggers.global", c.Triggers.Global)
	if len(c.Triggers.AlertLabels) == 0 {
		p.Add("patrol.triggers.alert_labels", "at least one label is required")
	}
	for i, l := range c.Triggers.AlertLabels {
		key := fmt.Sprintf("patrol.triggers.alert_labels[%d]", i)
		if strings.TrimSpace(l.Label) == "" {
			p.Add(key+".label", "required")
		}
		if !strings.Contains(l.ID, "{value}") && !strings.Contains(l.ID, "{host}") {
			p.Addf(key+".id", "%q has neither {value} nor {host}: every alert would name the same resource", l.ID)
		}
	}
	return p.Error()
}

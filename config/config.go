// Package config loads patrold's one YAML file: defaults, then the file,
// then PATROLD_* environment overrides; unknown keys are errors; Validate
// collects every problem naming its YAML key; String hides secrets.
//
// config composes; it owns no section. Each section is a type of the
// package it configures, with that package's defaults and Validate
// (the pattern is pinned by internal/archtest):
//   - Default is every section's DefaultX in one Config;
//   - Validate calls every section's Validate, in key order.
package config

import (
	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/logging"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/notify"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/snapshot/sources"
)

// Default locations of the configuration file, tried in order.
var DefaultPaths = []string{"/etc/patrold/patrold.yaml", "./patrold.yaml"}

// Config is the whole configuration.
type Config struct {
	DataDir  string                `koanf:"data_dir" yaml:"data_dir"`
	Log      logging.Config        `koanf:"log" yaml:"log"`
	HTTP     api.HTTPConfig        `koanf:"http" yaml:"http"`
	Schedule patrol.ScheduleConfig `koanf:"schedule" yaml:"schedule"`
	Source   sources.Config        `koanf:"source" yaml:"source"`
	// Sources, when set, are several sources in one run, merged (the
	// source section then keeps only its probe and file size bound).
	Sources       []sources.Member             `koanf:"sources" yaml:"sources,omitempty"`
	Alerts        alerts.Settings              `koanf:"alerts" yaml:"alerts"`
	Model         model.Options                `koanf:"model" yaml:"model"`
	Patrol        patrol.Config                `koanf:"patrol" yaml:"patrol"`
	Findings      findings.Config              `koanf:"findings" yaml:"findings"`
	Investigation findings.InvestigationConfig `koanf:"investigation" yaml:"investigation"`
	NATS          bus.Options                  `koanf:"nats" yaml:"nats"`
	Assistant     assistant.Settings           `koanf:"assistant" yaml:"assistant"`
	Actions       []assistant.ActionSpec       `koanf:"actions" yaml:"actions"`
	Notify        notify.Options               `koanf:"notify" yaml:"notify"`
	Retention     findings.Retention           `koanf:"retention" yaml:"retention"`
	// Cluster switches cluster mode on: several instances on one NATS
	// cluster, one of them (the lease holder) the writer. Absent (nil): a
	// single instance, which takes no lease and schedules whether or not
	// NATS is up.
	Cluster *cluster.Config `koanf:"cluster" yaml:"cluster,omitempty"`
}

// Clustered reports whether the cluster section is present.
func (c *Config) Clustered() bool { return c.Cluster != nil }

// Default returns the configuration with every default applied: an empty
// file yields exactly this.
func Default() Config {
	return Config{
		DataDir:       "./var",
		Log:           logging.DefaultConfig(),
		HTTP:          api.DefaultHTTPConfig(),
		Schedule:      patrol.DefaultScheduleConfig(),
		Source:        sources.DefaultConfig(),
		Model:         model.DefaultOptions(),
		Patrol:        patrol.DefaultConfig(),
		Findings:      findings.DefaultConfig(),
		Investigation: findings.DefaultInvestigationConfig(),
		NATS:          bus.DefaultOptions(),
		Assistant:     assistant.DefaultSettings(),
		Notify:        notify.DefaultOptions(),
		Retention:     findings.DefaultRetention(),
	}
}

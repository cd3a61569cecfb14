// Package sources owns the source section of the configuration: which
// snapshot source runs and each source's own section, with the prober's.
package sources

import (
	"github.com/patrold/patrold/internal/confcheck"
	"github.com/patrold/patrold/snapshot/demo"
	"github.com/patrold/patrold/snapshot/exec"
	"github.com/patrold/patrold/snapshot/file"
	"github.com/patrold/patrold/snapshot/probe"
	"github.com/patrold/patrold/snapshot/prometheus"
	"github.com/patrold/patrold/snapshot/proxmox"
)

// Kinds are the values source.kind accepts.
var Kinds = []string{"demo", "file", "exec", "prometheus", "proxmox"}

// Config is the source section.
type Config struct {
	Kind       string             `koanf:"kind" yaml:"kind"` // one of Kinds
	Demo       demo.Options       `koanf:"demo" yaml:"demo"`
	File       file.Options       `koanf:"file" yaml:"file"`
	Exec       exec.Options       `koanf:"exec" yaml:"exec"`
	Prometheus prometheus.Options `koanf:"prometheus" yaml:"prometheus"`
	Proxmox    proxmox.Options    `koanf:"proxmox" yaml:"proxmox"`
	// Probe configures the reachability prober for running guests with
	// addresses and no verdict from the source.
	Probe probe.Options `koanf:"probe" yaml:"probe"`
}

// DefaultConfig is the source section's defaults: the demo source.
func DefaultConfig() Config {
	return Config{Kind: "demo", Demo: demo.DefaultOptions(), File: file.DefaultOptions(), Exec: exec.DefaultOptions(),
		Prometheus: prometheus.DefaultOptions(), Proxmox: proxmox.DefaultOptions(), Probe: probe.DefaultOptions()}
}

// Validate reports every problem, each naming its key under source: the
// kind, the selected source's section, and what applies whatever the
// kind (source.file.max_bytes, source.probe).
func (c Config) Validate() error {
	var p confcheck.Problems
	p.OneOf("source.kind", c.Kind, Kinds...)
	switch c.Kind {
	case "demo":
		p.Err(c.Demo.Validate())
	case "exec":
		p.Err(c.Exec.Validate())
	case "prometheus":
		p.Err(c.Prometheus.Validate())
	case "proxmox":
		p.Err(c.Proxmox.Validate())
	}
	p.Err(c.File.ValidateSection(c.Kind == "file"))
	p.Err(c.Probe.Validate())
	return p.Error()
}

// Package sources owns the source section of the configuration: which
// snapshot source runs and each source's own section, with the prober's.
package sources

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/patrold/patrold/internal/confcheck"
	"github.com/patrold/patrold/snapshot/demo"
	"github.com/patrold/patrold/snapshot/exec"
	"github.com/patrold/patrold/snapshot/file"
	"github.com/patrold/patrold/snapshot/probe"
	"github.com/patrold/patrold/snapshot/prometheus"
	"github.com/patrold/patrold/snapshot/proxmox"
)

// Kinds are the values source.kind accepts.
var Kinds = []string{"demo", "file", "exec", "prometheus", "proxmox", "pbs"}

// Sections are what the source section and a sources entry share: the
// kind and each kind's own section.
type Sections struct {
	Kind       string             `koanf:"kind" yaml:"kind"` // one of Kinds
	Demo       demo.Options       `koanf:"demo" yaml:"demo"`
	File       file.Options       `koanf:"file" yaml:"file"`
	Exec       exec.Options       `koanf:"exec" yaml:"exec"`
	Prometheus prometheus.Options `koanf:"prometheus" yaml:"prometheus"`
	Proxmox    proxmox.Options    `koanf:"proxmox" yaml:"proxmox"`
	PBS        proxmox.PBSOptions `koanf:"pbs" yaml:"pbs"`
}

// Config is the source section.
type Config struct {
	Sections `koanf:",squash" yaml:",inline"`
	// Probe configures the reachability prober for running guests with
	// addresses and no verdict from the source.
	Probe probe.Options `koanf:"probe" yaml:"probe"`
}

// DefaultConfig is the source section's defaults: the demo source.
func DefaultConfig() Config {
	return Config{Sections: Sections{Kind: "demo", Demo: demo.DefaultOptions(), File: file.DefaultOptions(), Exec: exec.DefaultOptions(),
		Prometheus: prometheus.DefaultOptions(), Proxmox: proxmox.DefaultOptions(), PBS: proxmox.DefaultPBSOptions()}, Probe: probe.DefaultOptions()}
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
	case "pbs":
		p.Err(c.PBS.Validate())
	}
	p.Err(c.File.ValidateSection(c.Kind == "file"))
	p.Err(c.Probe.Validate())
	return p.Error()
}

// Member is one entry of the sources list: a source of several in one
// run, named, with the section of its kind. source.probe and
// source.file.max_bytes (for `patrold run --snapshot`) stay in the source
// section.
type Member struct {
	// Name names the source in problems, errors and its own finding
	// (patrold/source/<name>).
	Name     string `koanf:"name" yaml:"name"`
	Sections `koanf:",squash" yaml:",inline"`
}

// DefaultMember is what a sources entry starts from before its keys are
// read: every section at its defaults, as in the source section, and no
// kind.
func DefaultMember() Member {
	m := Member{Sections: DefaultConfig().Sections}
	m.Kind = ""
	return m
}

// Config is the source section m stands for, on top of base (whose
// probe and file size bound it keeps).
func (m Member) Config(base Config) Config {
	f := base.File
	f.Path = m.File.Path
	base.Sections = m.Sections
	base.File = f
	return base
}

// memberName is what sources[].name may be: it is part of a resource id.
var memberName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// ValidateList reports every problem of the sources list, each naming its
// key (sources[1].proxmox.url): a name of its own, a kind, its section.
// single is the source section, whose kind must be left alone when the
// list is set.
func ValidateList(list []Member, single Config) error {
	var p confcheck.Problems
	if len(list) > 0 && single.Kind != DefaultConfig().Kind {
		p.Addf("sources", "set either source.kind or sources, not both (source.kind is %q)", single.Kind)
	}
	names := map[string]bool{}
	for i, m := range list {
		key := fmt.Sprintf("sources[%d]", i)
		switch {
		case m.Name == "":
			p.Add(key+".name", "required")
		case !memberName.MatchString(m.Name):
			p.Addf(key+".name", "%q must be 1-32 lower-case letters, digits, '_' or '-', starting with a letter or digit", m.Name)
		case names[m.Name]:
			p.Addf(key+".name", "duplicate source name %q", m.Name)
		}
		names[m.Name] = true
		if err := m.Config(single).Validate(); err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "source.probe.") && !strings.HasPrefix(line, "source.file.max_bytes") {
					p.Line(key + strings.TrimPrefix(line, "source"))
				}
			}
		}
	}
	return p.Error()
}

// Describe names what collects, for status and logs: the source kind, or
// with a sources list each member as name(kind), joined by "+".
func Describe(single Config, list []Member) string {
	if len(list) == 0 {
		return single.Kind
	}
	parts := make([]string, len(list))
	for i, m := range list {
		parts[i] = m.Name + "(" + m.Kind + ")"
	}
	return strings.Join(parts, "+")
}

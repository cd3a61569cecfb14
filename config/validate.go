package config

import (
	"errors"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/internal/confcheck"
	"github.com/patrold/patrold/snapshot/sources"
)

// Validate checks every key and returns an *Error listing all problems:
// each section's own Validate, in key order.
func (c *Config) Validate() error {
	var p confcheck.Problems
	if strings.TrimSpace(c.DataDir) == "" {
		p.Add("data_dir", "must not be empty")
	}
	p.Err(c.Log.Validate())
	p.Err(c.HTTP.Validate())
	p.Err(c.Schedule.Validate())
	if len(c.Sources) > 0 {
		// The source section's kind is unused; its probe still applies.
		p.Err(c.Source.File.ValidateSection(false))
		p.Err(c.Source.Probe.Validate())
		p.Err(sources.ValidateList(c.Sources, c.Source))
	} else {
		p.Err(c.Source.Validate())
	}
	if _, err := alerts.New(c.Alerts); err != nil {
		var ve *alerts.ValidationError
		if errors.As(err, &ve) {
			for _, line := range ve.Problems {
				p.Line(line)
			}
		} else {
			p.Add("alerts", err.Error())
		}
	}
	p.Err(c.Model.Validate())
	p.Err(c.Patrol.Validate())
	p.Err(c.Findings.Validate())
	for _, line := range c.Retention.Validate("retention.") {
		p.Line(line)
	}
	p.Err(c.Investigation.Validate())
	p.Err(c.NATS.Validate())
	p.Err(c.Assistant.Validate())
	p.Err(assistant.ValidateActions(c.Actions))
	p.Err(c.Notify.Validate(c.NATS.SubjectPrefix))
	if c.Cluster != nil {
		p.Err(c.Cluster.Validate())
	}
	if list := p.List(); len(list) > 0 {
		return &Error{Problems: list}
	}
	return nil
}

// String renders the effective configuration as YAML with every secret
// hidden.
func (c Config) String() string {
	out, err := yamlv3.Marshal(c)
	if err != nil {
		return "config: " + err.Error()
	}
	return string(out)
}

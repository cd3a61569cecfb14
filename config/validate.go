package config

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/patrold/patrold/alerts"
)

// CronParser parses schedule.cron: five standard fields or a descriptor
// (@every 6h, @hourly, ...).
var CronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// instanceName is what cluster.instance may be (internal/instance applies
// the same rule to the name it generates or is given).
var instanceName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// Validate checks every key and returns an *Error listing all problems.
func (c *Config) Validate() error {
	var p problems
	if strings.TrimSpace(c.DataDir) == "" {
		p.add("data_dir", "must not be empty")
	}
	p.oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error")
	p.oneOf("log.format", c.Log.Format, "text", "json")
	if _, _, err := net.SplitHostPort(c.HTTP.Listen); err != nil {
		p.add("http.listen", fmt.Sprintf("%q is not host:port", c.HTTP.Listen))
	}
	if c.HTTP.MaxBodyBytes <= 0 {
		p.add("http.max_body_bytes", "must be positive")
	}
	if c.HTTP.ReadHeaderTimeout <= 0 {
		p.add("http.read_header_timeout", "must be positive")
	}
	if c.HTTP.ReadTimeout < c.HTTP.ReadHeaderTimeout {
		p.add("http.read_timeout", fmt.Sprintf("must be at least http.read_header_timeout (%s), got %s", c.HTTP.ReadHeaderTimeout, c.HTTP.ReadTimeout))
	}
	if c.HTTP.Pprof {
		admin := false
		for _, t := range c.HTTP.Tokens {
			admin = admin || t.Scope == "admin"
		}
		if !admin {
			p.add("http.pprof", "needs an admin token in http.tokens (the profiles are served to admin tokens only)")
		}
	}
	names := map[string]bool{}
	for i, t := range c.HTTP.Tokens {
		key := fmt.Sprintf("http.tokens[%d]", i)
		if t.Name == "" {
			p.add(key+".name", "required")
		} else if names[t.Name] {
			p.add(key+".name", fmt.Sprintf("duplicate token name %q", t.Name))
		}
		names[t.Name] = true
		if (t.Token == "") == (t.TokenFile == "") {
			p.add(key, "set exactly one of token and token_file")
		}
		p.oneOf(key+".scope", t.Scope, "read", "admin")
	}
	if _, err := CronParser.Parse(c.Schedule.Cron); err != nil {
		p.add("schedule.cron", fmt.Sprintf("%q: %v", c.Schedule.Cron, err))
	}
	p.nonNegative("schedule.startup_delay", c.Schedule.StartupDelay)
	p.nonNegative("schedule.skip_startup_if_recent", c.Schedule.SkipStartupIfRecent)
	p.positive("schedule.run_timeout", c.Schedule.RunTimeout)
	p.positive("schedule.drain_timeout", c.Schedule.DrainTimeout)
	p.oneOf("source.kind", c.Source.Kind, "demo", "file", "exec", "prometheus", "proxmox")
	switch c.Source.Kind {
	case "demo":
		p.err(c.Source.Demo.Validate())
	case "file":
		if c.Source.File.Path == "" {
			p.add("source.file.path", "required when source.kind is file")
		}
	case "exec":
		p.err(c.Source.Exec.Validate())
	case "prometheus":
		p.err(c.Source.Prometheus.Validate())
	case "proxmox":
		p.err(c.Source.Proxmox.Validate())
	}
	if c.Source.File.MaxBytes <= 0 {
		// Checked whatever the kind: `patrold run --snapshot` applies it.
		p.add("source.file.max_bytes", "must be positive")
	}
	if c.Source.Probe.Timeout < 0 {
		p.add("source.probe.timeout", fmt.Sprintf("must not be negative, got %s", c.Source.Probe.Timeout))
	}
	if c.Source.Probe.Concurrency < 0 {
		p.add("source.probe.concurrency", fmt.Sprintf("must not be negative, got %d", c.Source.Probe.Concurrency))
	}
	if _, err := alerts.New(c.Alerts); err != nil {
		var ve *alerts.ValidationError
		if errors.As(err, &ve) {
			p.list = append(p.list, ve.Problems...)
		} else {
			p.add("alerts", err.Error())
		}
	}
	p.err(c.Model.Validate())
	p.oneOf("patrol.autonomy", c.Patrol.Autonomy, "monitor", "approval", "assisted", "full")
	if c.Patrol.ModelFindings.MaxPerRun < 1 {
		p.add("patrol.model_findings.max_per_run", "must be at least 1")
	}
	if c.Patrol.ModelFindings.MaxPerResource < 1 {
		p.add("patrol.model_findings.max_per_resource", "must be at least 1")
	}
	p.positive("findings.resolved_retention", c.Findings.ResolvedRetention)
	c.Retention.validate(&p, "retention.")
	p.positive("findings.repeat_interval", c.Findings.RepeatInterval)
	p.positive("findings.flap.window", c.Findings.Flap.Window)
	if c.Findings.Flap.MaxTransitions < 1 {
		p.add("findings.flap.max_transitions", "must be at least 1")
	}
	inv := c.Investigation
	if inv.MaxAttempts < 1 {
		p.add("investigation.max_attempts", "must be at least 1")
	}
	p.positive("investigation.cooldown", inv.Cooldown)
	p.positive("investigation.timeout_cooldown", inv.TimeoutCooldown)
	p.positive("investigation.fix_retry_cooldown", inv.FixRetryCooldown)
	p.positive("investigation.timeout", inv.Timeout)
	if inv.MaxConcurrent < 1 {
		p.add("investigation.max_concurrent", "must be at least 1")
	}
	if inv.EvidenceBudget < 1 {
		p.add("investigation.evidence_budget", "must be at least 1")
	}
	p.err(c.NATS.Validate())
	if c.Assistant.MaxTurns < 1 {
		p.add("assistant.max_turns", "must be at least 1")
	}
	p.positive("assistant.approval_ttl", c.Assistant.ApprovalTTL)
	if c.Assistant.MaxTokens < 1 {
		p.add("assistant.max_tokens", "must be at least 1")
	}
	actions := map[string]bool{}
	for i, a := range c.Actions {
		key := fmt.Sprintf("actions[%d]", i)
		if a.Name == "" {
			p.add(key+".name", "required")
		} else if actions[a.Name] {
			p.add(key+".name", fmt.Sprintf("duplicate action %q", a.Name))
		}
		actions[a.Name] = true
		if len(a.Command) == 0 {
			p.add(key+".command", "required")
		}
		p.oneOf(key+".risk", a.Risk, "low", "medium", "high", "never")
		validateActionScope(&p, key, a)
	}
	p.err(c.Notify.Validate(c.NATS.SubjectPrefix))
	if c.Cluster != nil && c.Cluster.Instance != "" && !instanceName.MatchString(c.Cluster.Instance) {
		p.add("cluster.instance", fmt.Sprintf("%q must be 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit", c.Cluster.Instance))
	}
	if len(p.list) > 0 {
		return &Error{Problems: p.list}
	}
	return nil
}

type problems struct{ list []string }

func (p *problems) add(key, msg string) { p.list = append(p.list, key+": "+msg) }

func (p *problems) err(err error) {
	if err == nil {
		return
	}
	p.list = append(p.list, strings.Split(err.Error(), "\n")...)
}

func (p *problems) oneOf(key, v string, allowed ...string) {
	for _, a := range allowed {
		if v == a {
			return
		}
	}
	p.add(key, fmt.Sprintf("%q is not one of %s", v, strings.Join(allowed, ", ")))
}

func (p *problems) positive(key string, d time.Duration) {
	if d <= 0 {
		p.add(key, fmt.Sprintf("%s must be positive", d))
	}
}

func (p *problems) nonNegative(key string, d time.Duration) {
	if d < 0 {
		p.add(key, fmt.Sprintf("%s must not be negative", d))
	}
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

// validateActionScope checks an action's kinds and signals: both required,
// so an action is never silently "for anything".
func validateActionScope(p *problems, key string, a ActionConfig) {
	if len(a.Kinds) == 0 {
		p.add(key+".kinds", "required: the resource kinds the action may target ("+strings.Join(ActionKinds, ", ")+")")
	}
	for j, k := range a.Kinds {
		if !slices.Contains(ActionKinds, k) {
			p.add(fmt.Sprintf("%s.kinds[%d]", key, j), fmt.Sprintf("%q is not one of %s", k, strings.Join(ActionKinds, ", ")))
		}
	}
	if len(a.Signals) == 0 {
		p.add(key+".signals", `required: the signal types the action is declared for, or ["*"] for any signal`)
	}
	for j, s := range a.Signals {
		switch {
		case strings.TrimSpace(s) == "":
			p.add(fmt.Sprintf("%s.signals[%d]", key, j), "empty")
		case s == AnySignal && len(a.Signals) > 1:
			p.add(fmt.Sprintf("%s.signals[%d]", key, j), `"*" (any signal) must be the only entry`)
		}
	}
}

func (r RetentionConfig) validate(p *problems, prefix string) {
	for _, c := range []struct {
		key string
		d   time.Duration
	}{{"runs", r.Runs}, {"audit", r.Audit}, {"investigations", r.Investigations}, {"sessions", r.Sessions},
		{"approvals", r.Approvals}, {"silences", r.Silences}} {
		if c.d < time.Hour {
			p.list = append(p.list, fmt.Sprintf("%s%s: %s is shorter than 1h", prefix, c.key, c.d))
		}
	}
	if r.Runs >= time.Hour && r.Runs < MinRunRetention {
		p.list = append(p.list, fmt.Sprintf("%sruns: %s is shorter than %s (the 30-day model budget reads the runs)", prefix, r.Runs, MinRunRetention))
	}
}

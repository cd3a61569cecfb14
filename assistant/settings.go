package assistant

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/patrold/patrold/internal/confcheck"
)

// Settings are the assistant section's numbers (assistant.* in the YAML).
type Settings struct {
	Enabled     bool          `koanf:"enabled" yaml:"enabled"`
	MaxTurns    int           `koanf:"max_turns" yaml:"max_turns"`       // 0: DefaultMaxTurns
	ApprovalTTL time.Duration `koanf:"approval_ttl" yaml:"approval_ttl"` // 0: DefaultApprovalTTL
	// MaxTokens bounds the model tokens (input + output) of one session
	// (0: DefaultMaxTokens).
	MaxTokens int `koanf:"max_tokens" yaml:"max_tokens"`
}

// DefaultMaxTokens is the default token bound of one session.
const DefaultMaxTokens = 200000

// DefaultSettings is the assistant section's defaults.
func DefaultSettings() Settings {
	return Settings{Enabled: true, MaxTurns: DefaultMaxTurns, ApprovalTTL: DefaultApprovalTTL, MaxTokens: DefaultMaxTokens}
}

// Validate reports every problem, each naming its key under assistant.
// The file spells every number out: zero is refused.
func (s Settings) Validate() error {
	var p confcheck.Problems
	p.AtLeastOne("assistant.max_turns", s.MaxTurns)
	p.Positive("assistant.approval_ttl", s.ApprovalTTL)
	p.AtLeastOne("assistant.max_tokens", s.MaxTokens)
	return p.Error()
}

// ActionSpec declares one remediation action (one entry of the YAML
// `actions`); ParseActions checks and compiles them.
type ActionSpec struct {
	Name        string   `koanf:"name" yaml:"name"`
	Description string   `koanf:"description" yaml:"description"`
	Command     []string `koanf:"command" yaml:"command"`
	Risk        string   `koanf:"risk" yaml:"risk"` // low | medium | high | never
	// Kinds are the resource kinds the action may target (required).
	Kinds []string `koanf:"kinds" yaml:"kinds"`
	// Signals are the signal types it is declared for (required; ["*"] is
	// the explicit "any signal").
	Signals []string `koanf:"signals" yaml:"signals"`
}

// ActionKinds are the values an action's kinds accept ("guest" is vm and
// container).
var ActionKinds = []string{"node", "vm", "container", "storage", "disk", "guest"}

// AnySignal in an action's signals declares it for every signal.
const AnySignal = "*"

// ValidateActions reports every problem of the actions section, each
// naming its key (actions[i].field).
func ValidateActions(specs []ActionSpec) error {
	var p confcheck.Problems
	names := map[string]bool{}
	for i, a := range specs {
		key := fmt.Sprintf("actions[%d]", i)
		if a.Name == "" {
			p.Add(key+".name", "required")
		} else if names[a.Name] {
			p.Addf(key+".name", "duplicate action %q", a.Name)
		}
		names[a.Name] = true
		if len(a.Command) == 0 {
			p.Add(key+".command", "required")
		}
		p.OneOf(key+".risk", a.Risk, "low", "medium", "high", "never")
		validateScope(&p, key, a)
	}
	return p.Error()
}

// validateScope checks an action's kinds and signals: both required, so
// an action is never silently "for anything".
func validateScope(p *confcheck.Problems, key string, a ActionSpec) {
	if len(a.Kinds) == 0 {
		p.Add(key+".kinds", "required: the resource kinds the action may target ("+strings.Join(ActionKinds, ", ")+")")
	}
	for j, k := range a.Kinds {
		if !slices.Contains(ActionKinds, k) {
			p.Addf(fmt.Sprintf("%s.kinds[%d]", key, j), "%q is not one of %s", k, strings.Join(ActionKinds, ", "))
		}
	}
	if len(a.Signals) == 0 {
		p.Add(key+".signals", `required: the signal types the action is declared for, or ["*"] for any signal`)
	}
	for j, s := range a.Signals {
		switch {
		case strings.TrimSpace(s) == "":
			p.Add(fmt.Sprintf("%s.signals[%d]", key, j), "empty")
		case s == AnySignal && len(a.Signals) > 1:
			p.Add(fmt.Sprintf("%s.signals[%d]", key, j), `"*" (any signal) must be the only entry`)
		}
	}
}

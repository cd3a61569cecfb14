package assistant

import "time"

// Settings are the assistant section's numbers (assistant.* in the YAML;
// the composition root maps them from the configuration).
type Settings struct {
	Enabled     bool
	MaxTurns    int           // 0: DefaultMaxTurns
	ApprovalTTL time.Duration // 0: DefaultApprovalTTL
	// MaxTokens bounds the model tokens (input + output) of one session
	// (0: DefaultMaxTokens).
	MaxTokens int
}

// DefaultMaxTokens is the default token bound of one session.
const DefaultMaxTokens = 200000

// ActionSpec declares one remediation action (one entry of the YAML
// `actions`); ParseActions checks and compiles them.
type ActionSpec struct {
	Name        string
	Description string
	Command     []string
	Risk        string // low | medium | high | never
	// Kinds are the resource kinds the action may target (required).
	Kinds []string
	// Signals are the signal types it is declared for (required; ["*"] is
	// the explicit "any signal").
	Signals []string
}

// ActionKinds are the values an action's kinds accept ("guest" is vm and
// container).
var ActionKinds = []string{"node", "vm", "container", "storage", "disk", "guest"}

// AnySignal in an action's signals declares it for every signal.
const AnySignal = "*"

package agent

// Capabilities is the capability manifest served at
// GET /api/v1/agent/capabilities: the tools one profile advertises, the
// kinds, states, write targets, declared error codes and the runtime limits.
type Capabilities struct {
	Profile      string           `json:"profile"`
	Tools        []ToolCapability `json:"tools"`
	Kinds        []string         `json:"kinds"`
	States       []string         `json:"states"`
	WriteTargets []string         `json:"write_targets"`
	Codes        []CodeInfo       `json:"codes"`
	// Prechecks are the checks every call passes before any handler runs,
	// in the order they run (the registry's authority).
	Prechecks []PrecheckInfo `json:"prechecks"`
	// Events and Transitions are the state machine's transition table.
	Transitions []TransitionInfo `json:"transitions"`
	Limits      Limits           `json:"limits"`
}

// TransitionInfo is one sanctioned move of the state machine.
type TransitionInfo struct {
	From  string `json:"from"`
	Event Event  `json:"event"`
	To    string `json:"to"`
}

// ToolCapability describes one advertised tool.
type ToolCapability struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Kind is the tool's kind, or "discriminated" when an argument picks it.
	Kind          string            `json:"kind"`
	Discriminator string            `json:"discriminator,omitempty"`
	Cases         map[string]string `json:"cases,omitempty"`
	WriteTarget   WriteTarget       `json:"write_target,omitempty"`
	Idempotent    bool              `json:"idempotent"`
	Verifies      bool              `json:"verifies"`
	TimeoutMs     int64             `json:"timeout_ms"`
}

// Limits are the runtime's tuned constants.
type Limits struct {
	MaxParallelTools     int   `json:"max_parallel_tools"`
	MaxStringBytes       int   `json:"max_string_bytes"`
	MaxArrayItems        int   `json:"max_array_items"`
	MaxToolResultChars   int   `json:"max_tool_result_chars"`
	LoopThreshold        int   `json:"loop_threshold"`
	LookFirstMaxRefusals int   `json:"look_first_max_refusals"`
	RecoveryTTLMs        int64 `json:"recovery_ttl_ms"`
}

// Manifest describes what a session with this profile can do. Tools the
// registry does not hold are left out (Profile.Validate reports them).
func Manifest(reg *Registry, profile Profile) Capabilities {
	c := Capabilities{
		Profile:   profile.Name,
		Tools:     []ToolCapability{},
		Codes:     Codes(),
		Prechecks: Prechecks(),
		Limits: Limits{
			MaxParallelTools:     MaxParallelTools,
			MaxStringBytes:       MaxStringBytes,
			MaxArrayItems:        MaxArrayItems,
			MaxToolResultChars:   MaxToolResultChars,
			LoopThreshold:        LoopThreshold,
			LookFirstMaxRefusals: LookFirstMaxRefusals,
			RecoveryTTLMs:        RecoveryTTL.Milliseconds(),
		},
	}
	for _, from := range Phases() {
		for _, ev := range Events() {
			if to, ok := Transition(from, ev); ok {
				c.Transitions = append(c.Transitions, TransitionInfo{From: from.String(), Event: ev, To: to.String()})
			}
		}
	}
	for _, k := range Kinds() {
		c.Kinds = append(c.Kinds, k.String())
	}
	for _, s := range States() {
		c.States = append(c.States, string(s))
	}
	for _, t := range writeTargets {
		c.WriteTargets = append(c.WriteTargets, string(t))
	}
	for _, name := range profile.Tools {
		t, ok := reg.Tool(name)
		if !ok {
			continue
		}
		c.Tools = append(c.Tools, toolCapability(t))
	}
	return c
}

func toolCapability(t Tool) ToolCapability {
	tc := ToolCapability{
		Name: t.Name, Description: t.Description, Kind: t.Kind.String(),
		Idempotent: t.Idempotent, Verifies: t.Verifies, TimeoutMs: t.timeout().Milliseconds(),
	}
	if t.Discriminator != "" {
		tc.Kind = "discriminated"
		tc.Discriminator = t.Discriminator
		tc.Cases = map[string]string{}
		for _, v := range t.caseValues() {
			tc.Cases[v] = t.Cases[v].String()
		}
	}
	if t.Discriminator != "" || t.Kind == KindWrite {
		tc.WriteTarget = t.Target
	}
	return tc
}

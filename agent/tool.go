package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"time"
)

// DefaultToolTimeout bounds a tool that declares no timeout.
const DefaultToolTimeout = 30 * time.Second

// Handler runs a tool. The result is sent to the model as JSON. Return a
// *ToolError to report a structured code.
type Handler func(ctx context.Context, args json.RawMessage) (any, error)

// Tool declares one tool. The agent runtime knows no tools itself: patrol
// and assistant register theirs.
type Tool struct {
	Name        string
	Description string
	// Schema is the JSON schema of the arguments object (see schema.go for
	// the supported subset). Empty means "an object, anything goes".
	Schema json.RawMessage
	// Kind is the tool's kind when Discriminator is empty.
	Kind ToolKind
	// Discriminator names a string argument whose value picks the kind from
	// Cases. A missing or unlisted value classifies the call as a write.
	Discriminator string
	Cases         map[string]ToolKind
	// Target is what a write changes; required when the tool can write.
	Target WriteTarget
	// Idempotent tools are retried once on error. A tool that can write is
	// never retried: registration refuses Idempotent on it.
	Idempotent bool
	// Verifies: the tool re-collects the target's live state from the
	// source, so a successful resolve or read of it verifies a write. Any
	// other read (patrold's own records, say) establishes a target but never
	// completes verification. Only resolve and read tools (or cases) verify.
	Verifies bool
	// Authority judges an infrastructure write's target, kind, signal,
	// policy, approval and live condition before it runs (see Prechecks);
	// required for tools that can write to infrastructure.
	Authority Authority
	// Timeout bounds one attempt; 0 means DefaultToolTimeout.
	Timeout time.Duration
	// ReadsFindings / WritesFindings: a batch holding both runs in provider
	// order, so the read establishes the write's precondition.
	ReadsFindings  bool
	WritesFindings bool
	Handler        Handler
}

var toolName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// validate checks a declaration, naming the field.
func (t Tool) validate() error {
	if !toolName.MatchString(t.Name) {
		return fmt.Errorf("name: %q must match %s", t.Name, toolName)
	}
	if t.Handler == nil {
		return fmt.Errorf("handler: required")
	}
	if t.Timeout < 0 {
		return fmt.Errorf("timeout: must not be negative, got %s", t.Timeout)
	}
	canWrite := t.Kind == KindWrite
	if t.Discriminator == "" {
		if !t.Kind.Valid() {
			return fmt.Errorf("kind: invalid %d", int(t.Kind))
		}
		if len(t.Cases) > 0 {
			return fmt.Errorf("cases: set without discriminator")
		}
	} else {
		if len(t.Cases) == 0 {
			return fmt.Errorf("cases: required with discriminator %q", t.Discriminator)
		}
		for v, k := range t.Cases {
			if !k.Valid() {
				return fmt.Errorf("cases.%s: invalid kind %d", v, int(k))
			}
		}
		canWrite = true // an unlisted value is a write (fail closed)
	}
	if canWrite && !slices.Contains(writeTargets, t.Target) {
		return fmt.Errorf("target: a tool that can write needs target %q or %q, got %q", TargetInfrastructure, TargetPatrolState, t.Target)
	}
	if canWrite && t.Idempotent {
		return fmt.Errorf("idempotent: a tool that can write is never retried")
	}
	if canWrite && t.Target == TargetInfrastructure && t.Authority == nil {
		return fmt.Errorf("authority: required for a tool that writes to infrastructure")
	}
	if t.Verifies && !t.canRead() {
		return fmt.Errorf("verifies: only a resolve or read tool re-collects live state")
	}
	return nil
}

// canRead reports whether some call of t is a resolve or a read.
func (t Tool) canRead() bool {
	isRead := func(k ToolKind) bool { return k == KindResolve || k == KindRead }
	if t.Discriminator == "" {
		return isRead(t.Kind)
	}
	for _, k := range t.Cases {
		if isRead(k) {
			return true
		}
	}
	return false
}

func (t Tool) timeout() time.Duration {
	if t.Timeout == 0 {
		return DefaultToolTimeout
	}
	return t.Timeout
}

// classify returns the kind of one call of t. Discriminated tools read the
// discriminating argument; anything missing or unknown is a write.
func (t Tool) classify(args json.RawMessage) ToolKind {
	if t.Discriminator == "" {
		return t.Kind
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil {
		return KindWrite
	}
	var value string
	if err := json.Unmarshal(obj[t.Discriminator], &value); err != nil {
		return KindWrite
	}
	kind, ok := t.Cases[value]
	if !ok {
		return KindWrite
	}
	return kind
}

// caseValues lists the discriminator values in order.
func (t Tool) caseValues() []string {
	out := make([]string, 0, len(t.Cases))
	for v := range t.Cases {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

package agent

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/patrold/patrold/model"
)

// Registry holds the declared tools and classifies calls. It is immutable
// after construction and safe for concurrent use.
type Registry struct {
	tools map[string]*entry
	order []string
}

type entry struct {
	tool   Tool
	schema *schema
}

// NewRegistry validates and registers tools. Errors name the field as
// tools[i].field.
func NewRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{tools: make(map[string]*entry, len(tools))}
	for i, t := range tools {
		if err := t.validate(); err != nil {
			return nil, fmt.Errorf("tools[%d].%w", i, err)
		}
		if _, dup := r.tools[t.Name]; dup {
			return nil, fmt.Errorf("tools[%d].name: %q registered twice", i, t.Name)
		}
		s, err := compileSchema(t.Schema)
		if err != nil {
			return nil, fmt.Errorf("tools[%d].schema: %w", i, err)
		}
		if t.Discriminator != "" {
			if err := checkDiscriminator(t, s); err != nil {
				return nil, fmt.Errorf("tools[%d].%w", i, err)
			}
		}
		r.tools[t.Name] = &entry{tool: t, schema: s}
		r.order = append(r.order, t.Name)
	}
	return r, nil
}

// checkDiscriminator requires the discriminating argument to be a declared
// string property.
func checkDiscriminator(t Tool, s *schema) error {
	p, ok := s.Properties[t.Discriminator]
	if !ok || p.Type != "string" {
		return fmt.Errorf("discriminator: %q must be a string property of the schema", t.Discriminator)
	}
	return nil
}

// Tool returns a registered tool.
func (r *Registry) Tool(name string) (Tool, bool) {
	e, ok := r.tools[name]
	if !ok {
		return Tool{}, false
	}
	return e.tool, true
}

// Names returns the registered tool names in registration order.
func (r *Registry) Names() []string { return slices.Clone(r.order) }

// ClassifyToolCall returns the kind of one call. It fails closed: an unknown
// tool, or a known tool whose discriminating argument is missing or unknown,
// is a write.
func (r *Registry) ClassifyToolCall(name string, args json.RawMessage) ToolKind {
	kind, _ := r.Classify(name, args)
	return kind
}

// Classify returns the kind of one call and, for writes, its target. An
// unknown tool is an infrastructure write.
func (r *Registry) Classify(name string, args json.RawMessage) (ToolKind, WriteTarget) {
	if r == nil {
		return KindWrite, TargetInfrastructure
	}
	e, ok := r.tools[name]
	if !ok {
		return KindWrite, TargetInfrastructure
	}
	kind := e.tool.classify(args)
	if kind != KindWrite {
		return kind, ""
	}
	return kind, e.tool.Target
}

// ClassifyToolCall classifies a call with no registry at hand. The runtime
// knows no tools of its own, so every call is a write (fail closed); use
// Registry.ClassifyToolCall to classify against declared tools.
func ClassifyToolCall(name string, args json.RawMessage) ToolKind {
	var none *Registry
	return none.ClassifyToolCall(name, args)
}

// Profile is the set of tools advertised to the model in one kind of
// session (detection, evaluation, remediation, ...).
type Profile struct {
	Name  string
	Tools []string
}

// Validate checks that the profile only names registered tools, once each.
func (p Profile) Validate(r *Registry) error {
	if p.Name == "" {
		return fmt.Errorf("profile.name: required")
	}
	seen := map[string]bool{}
	for i, name := range p.Tools {
		if _, ok := r.tools[name]; !ok {
			return fmt.Errorf("profile.tools[%d]: %q is not registered", i, name)
		}
		if seen[name] {
			return fmt.Errorf("profile.tools[%d]: %q listed twice", i, name)
		}
		seen[name] = true
	}
	return nil
}

// Advertises reports whether the profile offers the tool.
func (p Profile) Advertises(name string) bool { return slices.Contains(p.Tools, name) }

// ToolDefs returns the model-facing definitions of the profile's tools.
func (r *Registry) ToolDefs(p Profile) []model.ToolDef {
	defs := make([]model.ToolDef, 0, len(p.Tools))
	for _, name := range p.Tools {
		e, ok := r.tools[name]
		if !ok {
			continue
		}
		params := e.tool.Schema
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object"}`)
		}
		defs = append(defs, model.ToolDef{Name: name, Description: e.tool.Description, Parameters: params})
	}
	return defs
}

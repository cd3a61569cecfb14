// Package script holds the providers that need no model. The scripted
// provider of docs/MODELS.md returns a fixed list of turns in order,
// whatever it is asked. The replay provider re-plays a recorded exchange
// (model.Recording), so a past run can be re-executed.
package script

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/patrold/patrold/model"
)

// MaxScriptBytes bounds a script file.
const MaxScriptBytes = 4 << 20

var toolNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Script is a decoded, validated script.
type Script struct {
	Turns []Turn `json:"turns"`
}

// Turn is one scripted answer.
type Turn struct {
	Text      string           `json:"text,omitempty"`
	ToolCalls []model.ToolCall `json:"tool_calls,omitempty"`
	// Usage, when given, is reported as the turn's usage; otherwise usage is
	// estimated from the request and the turn's text.
	Usage *model.Usage `json:"usage,omitempty"`
}

// Parse decodes a script from YAML or JSON (JSON is YAML). Every problem is
// reported with its path, e.g. "turns[1].tool_calls[0].name: required".
func Parse(data []byte) (*Script, error) {
	if len(data) > MaxScriptBytes {
		return nil, fmt.Errorf("script: larger than %d bytes", MaxScriptBytes)
	}
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("script: not YAML or JSON: %s", firstLine(err.Error()))
	}
	d := &decoder{}
	s := d.script(doc)
	if len(d.problems) > 0 {
		return nil, &Error{Problems: d.problems}
	}
	return s, nil
}

// Error lists every problem of a script, each with its path.
type Error struct{ Problems []string }

func (e *Error) Error() string { return "script: " + strings.Join(e.Problems, "; ") }

type decoder struct{ problems []string }

func (d *decoder) fail(path, format string, args ...any) {
	d.problems = append(d.problems, path+": "+fmt.Sprintf(format, args...))
}

// object checks v is a mapping with only the allowed keys.
func (d *decoder) object(path string, v any, allowed ...string) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		d.fail(path, "must be a mapping, got %s", describe(v))
		return nil, false
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !contains(allowed, k) {
			d.fail(join(path, k), "unknown field (expected one of %s)", strings.Join(allowed, ", "))
		}
	}
	return m, true
}

func (d *decoder) script(doc any) *Script {
	if doc == nil {
		d.fail("turns", "required")
		return nil
	}
	m, ok := d.object("", doc, "turns")
	if !ok {
		return nil
	}
	raw, present := m["turns"]
	list, isList := raw.([]any)
	switch {
	case !present || raw == nil:
		d.fail("turns", "required")
		return nil
	case !isList:
		d.fail("turns", "must be a list, got %s", describe(raw))
		return nil
	case len(list) == 0:
		d.fail("turns", "must not be empty")
		return nil
	}
	s := &Script{}
	for i, t := range list {
		s.Turns = append(s.Turns, d.turn(i, t))
	}
	return s
}

func (d *decoder) turn(i int, v any) Turn {
	var t Turn
	path := fmt.Sprintf("turns[%d]", i)
	before := len(d.problems)
	m, ok := d.object(path, v, "text", "tool_calls", "usage")
	if !ok {
		return t
	}
	if raw, ok := m["text"]; ok && raw != nil {
		s, isStr := raw.(string)
		if !isStr {
			d.fail(path+".text", "must be a string, got %s", describe(raw))
		}
		t.Text = s
	}
	if raw, ok := m["tool_calls"]; ok && raw != nil {
		list, isList := raw.([]any)
		if !isList {
			d.fail(path+".tool_calls", "must be a list, got %s", describe(raw))
		}
		for j, c := range list {
			t.ToolCalls = append(t.ToolCalls, d.call(fmt.Sprintf("%s.tool_calls[%d]", path, j), c, fmt.Sprintf("call_%d_%d", i+1, j+1)))
		}
	}
	if raw, ok := m["usage"]; ok && raw != nil {
		t.Usage = d.usage(path+".usage", raw)
	}
	if t.Text == "" && len(t.ToolCalls) == 0 && len(d.problems) == before {
		d.fail(path, "needs text or tool_calls")
	}
	return t
}

func (d *decoder) call(path string, v any, fallbackID string) model.ToolCall {
	c := model.ToolCall{ID: fallbackID, Arguments: json.RawMessage(`{}`)}
	m, ok := d.object(path, v, "id", "name", "arguments")
	if !ok {
		return c
	}
	switch name, isStr := m["name"].(string); {
	case m["name"] == nil:
		d.fail(path+".name", "required")
	case !isStr:
		d.fail(path+".name", "must be a string, got %s", describe(m["name"]))
	case !toolNamePattern.MatchString(name):
		d.fail(path+".name", "%q is not a tool name ([A-Za-z0-9_-], at most 64)", name)
	default:
		c.Name = name
	}
	if raw, ok := m["id"]; ok && raw != nil {
		id, isStr := raw.(string)
		if !isStr || id == "" {
			d.fail(path+".id", "must be a non-empty string")
		}
		c.ID = id
	}
	if raw, ok := m["arguments"]; ok && raw != nil {
		c.Arguments = d.arguments(path+".arguments", raw)
	}
	return c
}

// arguments accepts a mapping (becomes a JSON object) or a string holding
// a JSON object.
func (d *decoder) arguments(path string, raw any) json.RawMessage {
	switch a := raw.(type) {
	case map[string]any:
		b, err := json.Marshal(a)
		if err != nil {
			d.fail(path, "cannot be expressed as JSON: %s", firstLine(err.Error()))
			return json.RawMessage(`{}`)
		}
		return b
	case string:
		var obj map[string]any
		if err := json.Unmarshal([]byte(a), &obj); err != nil || obj == nil {
			d.fail(path, "a string must hold a JSON object")
			return json.RawMessage(`{}`)
		}
		return model.NormalizeArguments([]byte(a))
	}
	d.fail(path, "must be a mapping, got %s", describe(raw))
	return json.RawMessage(`{}`)
}

func (d *decoder) usage(path string, raw any) *model.Usage {
	m, ok := d.object(path, raw, "input_tokens", "output_tokens")
	if !ok {
		return nil
	}
	u := &model.Usage{}
	for key, dst := range map[string]*int{"input_tokens": &u.InputTokens, "output_tokens": &u.OutputTokens} {
		v, present := m[key]
		if !present {
			continue
		}
		n, isInt := v.(int)
		if !isInt || n < 0 {
			d.fail(path+"."+key, "must be a non-negative integer, got %v", v)
			continue
		}
		*dst = n
	}
	return u
}

func describe(v any) string {
	switch v.(type) {
	case nil:
		return "nothing"
	case map[string]any, map[any]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return "a string"
	case int, int64, uint64, float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// errEmpty is returned by Load for an empty file.
var errEmpty = errors.New("script: file is empty")

package agent

import (
	"encoding/json"
	"strings"
	"testing"
)

const richSchema = `{
  "type": "object",
  "description": "test",
  "additionalProperties": false,
  "properties": {
    "id":       {"type": "string", "description": "resource id"},
    "action":   {"type": "string", "enum": ["start", "stop"]},
    "count":    {"type": "integer"},
    "ratio":    {"type": "number"},
    "force":    {"type": "boolean"},
    "tags":     {"type": "array", "items": {"type": "string"}},
    "limits":   {"type": "object", "properties": {"cpu": {"type": "number"}}, "required": ["cpu"]}
  },
  "required": ["id"]
}`

func TestSchemaValidate(t *testing.T) {
	s, err := compileSchema(json.RawMessage(richSchema))
	if err != nil {
		t.Fatal(err)
	}
	ok := []string{
		`{"id":"vm/1"}`,
		`{"id":"vm/1","action":"stop","count":3,"ratio":0.5,"force":true,"tags":["a"],"limits":{"cpu":2}}`,
		`{"id":"vm/1","count":3.0}`,
	}
	for _, in := range ok {
		if err := s.validateArgs(json.RawMessage(in)); err != nil {
			t.Errorf("%s: %v", in, err)
		}
	}
	bad := map[string]string{
		`{}`:                           "arguments.id: required",
		``:                             "arguments.id: required",
		`{"id":1}`:                     "arguments.id: must be a string, got a number",
		`{"id":"x","action":"delete"}`: `arguments.action: must be one of "start", "stop"`,
		`{"id":"x","count":1.5}`:       "arguments.count: must be an integer",
		`{"id":"x","ratio":"1"}`:       "arguments.ratio: must be a number, got a string",
		`{"id":"x","force":"yes"}`:     "arguments.force: must be a boolean",
		`{"id":"x","tags":["a",2]}`:    "arguments.tags[1]: must be a string",
		`{"id":"x","limits":{}}`:       "arguments.limits.cpu: required",
		`{"id":"x","extra":1}`:         "arguments.extra: unknown argument",
		`[1]`:                          "arguments: must be an object, got an array",
		`{"id":"x"} trailing`:          "arguments: not valid JSON",
		`{"id":`:                       "arguments: not valid JSON",
	}
	for in, want := range bad {
		err := s.validateArgs(json.RawMessage(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", in, err, want)
		}
	}
}

func TestSchemaCompileRejects(t *testing.T) {
	bad := map[string]string{
		`{"type":"string"}`:                                                `type: the top level must be "object"`,
		`{"properties":{}}`:                                                "type: required",
		`{"type":"object","pattern":"x"}`:                                  "pattern: unsupported keyword",
		`{"type":"object","properties":{"a":{"type":"date"}}}`:             `properties.a.type: unsupported type "date"`,
		`{"type":"object","required":["a"]}`:                               `required: "a" is not a declared property`,
		`{"type":"object","properties":{"a":{"type":"string","enum":[]}}}`: "properties.a.enum: must list at least one value",
		`[]`:                                     "must be a JSON object",
		`{"type":"object","properties":{"a":3}}`: "properties.a: must be a JSON object",
	}
	for in, want := range bad {
		_, err := compileSchema(json.RawMessage(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", in, err, want)
		}
	}
}

func TestCanonicalArgs(t *testing.T) {
	a := canonicalArgs(json.RawMessage(`{ "b": 1, "a": {"y": 2.50, "x": [3, "z"]} }`))
	b := canonicalArgs(json.RawMessage(`{"a":{"x":[3,"z"],"y":2.50},"b":1}`))
	if string(a) != string(b) || string(a) != `{"a":{"x":[3,"z"],"y":2.50},"b":1}` {
		t.Fatalf("canonical forms differ: %s vs %s", a, b)
	}
	if string(canonicalArgs(nil)) != "{}" || string(canonicalArgs(json.RawMessage("null"))) != "{}" {
		t.Fatal("empty arguments are not {}")
	}
	if string(canonicalArgs(json.RawMessage(`{"a":1}`))) == string(canonicalArgs(json.RawMessage(`{"a":2}`))) {
		t.Fatal("different arguments share a canonical form")
	}
}

func FuzzValidateArgs(f *testing.F) {
	s, err := compileSchema(json.RawMessage(richSchema))
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{`{"id":"a"}`, `{"id":"a","tags":["x",1]}`, `{"limits":{"cpu":"1"}}`, `null`, `[]`, `{"id":"a","count":1e400}`, "\x00"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := s.validateArgs(b)
		if err != nil && !strings.HasPrefix(err.Error(), "arguments") {
			t.Fatalf("error does not name the argument: %v", err)
		}
		if err == nil {
			var m map[string]any
			if json.Unmarshal(b, &m) != nil && len(strings.TrimSpace(string(b))) > 0 && string(b) != "null" {
				t.Fatalf("accepted non-object %q", b)
			}
			if _, ok := m["id"].(string); !ok {
				t.Fatalf("accepted %q without a string id", b)
			}
		}
		_ = canonicalArgs(b)
	})
}

func FuzzCompileSchema(f *testing.F) {
	for _, seed := range []string{richSchema, `{"type":"object"}`, `{"type":"object","properties":{"a":{"type":"array","items":{"type":"object"}}}}`, `{}`, `1`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := compileSchema(b)
		if err != nil {
			return
		}
		if s.Type != "object" {
			t.Fatalf("compiled a %q top level", s.Type)
		}
		_ = s.validateArgs(json.RawMessage(`{"a":[1,{"b":null}],"id":"x"}`))
	})
}

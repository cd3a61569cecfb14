package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
)

// schema is the compiled subset of JSON Schema the registry enforces: type
// (object, string, number, integer, boolean, array), properties, required,
// enum, items and additionalProperties (boolean). Annotation keywords are
// ignored; any other keyword is refused at registration, so a schema never
// promises a check that is not made.
type schema struct {
	Type       string
	Properties map[string]*schema
	Required   []string
	Enum       []any
	Items      *schema
	Closed     bool // additionalProperties: false
	MaxLength  int  // strings: bytes; 0 = MaxStringBytes
	MaxItems   int  // arrays: items; 0 = MaxArrayItems
}

// Argument bounds (docs/ASSISTANT_SAFETY.md): a string argument is at most
// MaxStringBytes unless its schema declares maxLength, an array at most
// MaxArrayItems unless it declares maxItems; larger is INVALID_INPUT.
const (
	MaxStringBytes = 2048
	MaxArrayItems  = 64
)

var schemaTypes = []string{"object", "string", "number", "integer", "boolean", "array"}

var annotationKeywords = map[string]bool{"description": true, "title": true, "default": true, "examples": true, "$schema": true}

// compileSchema parses a tool's JSON schema (type, properties, required,
// enum, items, additionalProperties, maxLength, maxItems). The top level
// must be an object.
func compileSchema(raw json.RawMessage) (*schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return &schema{Type: "object"}, nil
	}
	s, err := compileNode(raw, "")
	if err != nil {
		return nil, err
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("type: the top level must be \"object\", got %q", s.Type)
	}
	return s, nil
}

func compileNode(raw json.RawMessage, path string) (*schema, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		if path == "" {
			return nil, fmt.Errorf("must be a JSON object")
		}
		return nil, fmt.Errorf("%s: must be a JSON object", path)
	}
	s := &schema{}
	for key, val := range m {
		var err error
		switch key {
		case "type":
			err = json.Unmarshal(val, &s.Type)
			if err == nil && !slices.Contains(schemaTypes, s.Type) {
				err = fmt.Errorf("unsupported type %q", s.Type)
			}
		case "properties":
			err = s.compileProperties(val, path)
		case "required":
			err = json.Unmarshal(val, &s.Required)
		case "enum":
			err = decodeJSON(val, &s.Enum)
			if err == nil && len(s.Enum) == 0 {
				err = fmt.Errorf("must list at least one value")
			}
		case "items":
			s.Items, err = compileNode(val, join(path, "items"))
		case "maxLength":
			err = json.Unmarshal(val, &s.MaxLength)
			if err == nil && s.MaxLength < 1 {
				err = fmt.Errorf("must be at least 1, got %d", s.MaxLength)
			}
		case "maxItems":
			err = json.Unmarshal(val, &s.MaxItems)
			if err == nil && s.MaxItems < 1 {
				err = fmt.Errorf("must be at least 1, got %d", s.MaxItems)
			}
		case "additionalProperties":
			var open bool
			err = json.Unmarshal(val, &open)
			s.Closed = !open
		default:
			if !annotationKeywords[key] {
				err = fmt.Errorf("unsupported keyword")
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", join(path, key), err)
		}
	}
	if s.Type == "" {
		return nil, fmt.Errorf("%s: required", join(path, "type"))
	}
	for _, name := range s.Required {
		if _, ok := s.Properties[name]; !ok {
			return nil, fmt.Errorf("%s: %q is not a declared property", join(path, "required"), name)
		}
	}
	return s, nil
}

func (s *schema) compileProperties(val json.RawMessage, path string) error {
	var props map[string]json.RawMessage
	if err := json.Unmarshal(val, &props); err != nil {
		return err
	}
	s.Properties = make(map[string]*schema, len(props))
	for name, p := range props {
		sub, err := compileNode(p, join(path, "properties."+name))
		if err != nil {
			return err
		}
		s.Properties[name] = sub
	}
	return nil
}

// validateArgs checks tool arguments against the schema. Empty or null
// arguments count as {}. Errors name the argument path.
func (s *schema) validateArgs(raw json.RawMessage) error {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		trimmed = []byte("{}")
	}
	var v any
	if err := decodeJSON(trimmed, &v); err != nil {
		return fmt.Errorf("arguments: not valid JSON: %v", err)
	}
	return s.check(v, "arguments")
}

func (s *schema) check(v any, path string) error {
	if err := checkType(s.Type, v, path); err != nil {
		return err
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return jsonEqual(e, v) }) {
		return fmt.Errorf("%s: must be one of %s", path, enumList(s.Enum))
	}
	switch val := v.(type) {
	case map[string]any:
		return s.checkObject(val, path)
	case string:
		if limit := boundOr(s.MaxLength, MaxStringBytes); len(val) > limit {
			return fmt.Errorf("%s: %d bytes, at most %d allowed", path, len(val), limit)
		}
	case []any:
		if limit := boundOr(s.MaxItems, MaxArrayItems); len(val) > limit {
			return fmt.Errorf("%s: %d items, at most %d allowed", path, len(val), limit)
		}
		if s.Items == nil {
			for i, item := range val {
				if err := checkBounds(item, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
			return nil
		}
		for i, item := range val {
			if err := s.Items.check(item, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkBounds applies the default bounds to a value no schema describes.
func checkBounds(v any, path string) error {
	switch val := v.(type) {
	case string:
		if len(val) > MaxStringBytes {
			return fmt.Errorf("%s: %d bytes, at most %d allowed", path, len(val), MaxStringBytes)
		}
	case []any:
		if len(val) > MaxArrayItems {
			return fmt.Errorf("%s: %d items, at most %d allowed", path, len(val), MaxArrayItems)
		}
		for i, item := range val {
			if err := checkBounds(item, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case map[string]any:
		for k, item := range val {
			if len(k) > MaxStringBytes {
				return fmt.Errorf("%s: a key of %d bytes, at most %d allowed", path, len(k), MaxStringBytes)
			}
			if err := checkBounds(item, join(path, k)); err != nil {
				return err
			}
		}
	}
	return nil
}

func boundOr(declared, def int) int {
	if declared > 0 {
		return declared
	}
	return def
}

func (s *schema) checkObject(obj map[string]any, path string) error {
	for _, name := range s.Required {
		if _, ok := obj[name]; !ok {
			return fmt.Errorf("%s: required", join(path, name))
		}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		sub, ok := s.Properties[k]
		if !ok {
			if s.Closed {
				return fmt.Errorf("%s: unknown argument", join(path, k))
			}
			if err := checkBounds(obj[k], join(path, k)); err != nil {
				return err
			}
			continue
		}
		if err := sub.check(obj[k], join(path, k)); err != nil {
			return err
		}
	}
	return nil
}

func checkType(want string, v any, path string) error {
	ok := false
	switch want {
	case "object":
		_, ok = v.(map[string]any)
	case "array":
		_, ok = v.([]any)
	case "string":
		_, ok = v.(string)
	case "boolean":
		_, ok = v.(bool)
	case "number":
		_, ok = v.(json.Number)
	case "integer":
		n, isNum := v.(json.Number)
		if isNum {
			f, err := n.Float64()
			ok = err == nil && f == math.Trunc(f) && !math.IsInf(f, 0)
		}
	}
	if !ok {
		return fmt.Errorf("%s: must be %s, got %s", path, article(want), jsonTypeName(v))
	}
	return nil
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

func article(t string) string {
	if t == "object" || t == "array" || t == "integer" {
		return "an " + t
	}
	return "a " + t
}

func jsonEqual(a, b any) bool {
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(x, y)
}

func enumList(vals []any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		b, _ := json.Marshal(v)
		parts[i] = string(b)
	}
	return strings.Join(parts, ", ")
}

// decodeJSON decodes one JSON value keeping numbers exact.
func decodeJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

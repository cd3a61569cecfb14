package docs

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/patrol"
)

// schemaTypes maps each shipped schema to the Go type its events are
// marshalled from.
var schemaTypes = map[string]reflect.Type{
	"patrold.finding.v1.json":             reflect.TypeFor[findings.FindingEventData](),
	"patrold.approval.v1.json":            reflect.TypeFor[assistant.ApprovalEventData](),
	"patrold.run.completed.v1.json":       reflect.TypeFor[patrol.RunCompleted](),
	"patrold.remediation.request.v1.json": reflect.TypeFor[contracts.RemediationRequest](),
	"patrold.remediation.outcome.v1.json": reflect.TypeFor[contracts.RemediationOutcome](),
	"patrold.trigger.request.v1.json":     reflect.TypeFor[contracts.TriggerRequest](),
	"patrold.trigger.answer.v1.json":      reflect.TypeFor[contracts.TriggerAnswer](),
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
	// textType is outside text made safe: a JSON string on the wire.
	textType = reflect.TypeFor[prompt.Text]()
)

// jsonField is one field of a struct as encoding/json writes it.
type jsonField struct {
	name      string
	omitEmpty bool
	typ       reflect.Type
}

// jsonFields lists the fields encoding/json writes for struct type t,
// embedded structs flattened.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" || !sf.IsExported() && !sf.Anonymous {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(sf.Type)...)
			continue
		}
		if name == "" {
			name = sf.Name
		}
		// omitzero leaves out a zero Text (the empty string) as omitempty
		// leaves out an empty string.
		omit := slices.Contains(strings.Split(opts, ","), "omitempty") || (sf.Type == textType && slices.Contains(strings.Split(opts, ","), "omitzero"))
		out = append(out, jsonField{name: name, omitEmpty: omit, typ: sf.Type})
	}
	return out
}

// jsonKinds are the JSON types a value of Go type t may take.
func jsonKinds(t reflect.Type) []string {
	null := []string{}
	for t.Kind() == reflect.Pointer {
		t, null = t.Elem(), []string{"null"}
	}
	switch {
	case t == timeType, t == textType:
		return append(null, "string")
	case t == rawType:
		return nil // any JSON value
	}
	switch t.Kind() {
	case reflect.String:
		return append(null, "string")
	case reflect.Bool:
		return append(null, "boolean")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return append(null, "integer", "number")
	case reflect.Float32, reflect.Float64:
		return append(null, "number")
	case reflect.Slice:
		return append(null, "array", "null")
	case reflect.Map:
		return append(null, "object", "null")
	case reflect.Struct:
		return append(null, "object")
	}
	return nil
}

// schemaKinds are the JSON types a schema admits: its "type", or the
// types of its enum values; nil when it does not say.
func schemaKinds(s map[string]any) []string {
	switch ty := s["type"].(type) {
	case string:
		return []string{ty}
	case []any:
		var out []string
		for _, x := range ty {
			out = append(out, x.(string))
		}
		return out
	}
	if enum, ok := s["enum"].([]any); ok {
		set := map[string]bool{}
		for _, v := range enum {
			switch v.(type) {
			case string:
				set["string"] = true
			case float64:
				set["number"] = true
			case bool:
				set["boolean"] = true
			case nil:
				set["null"] = true
			}
		}
		var out []string
		for k := range set {
			out = append(out, k)
		}
		return out
	}
	return nil
}

// compareSchemaType reports every difference between a schema and the Go
// type at path: properties both ways, required against omitempty, and
// each property's JSON type.
func compareSchemaType(s map[string]any, t reflect.Type, path string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var problems []string
	if kinds := schemaKinds(s); kinds != nil {
		if goKinds := jsonKinds(t); goKinds != nil {
			for _, k := range kinds {
				if k != "null" && !slices.Contains(goKinds, k) && !(k == "number" && slices.Contains(goKinds, "integer")) {
					problems = append(problems, fmt.Sprintf("%s: schema type %s, Go %s writes %v", path, k, t, goKinds))
				}
			}
			for _, k := range goKinds {
				if k != "null" && k != "number" && !slices.Contains(kinds, k) {
					problems = append(problems, fmt.Sprintf("%s: Go %s writes %s, schema admits %v", path, t, k, kinds))
				}
			}
		}
	}
	switch {
	case t.Kind() == reflect.Slice && t != rawType:
		if items, ok := s["items"].(map[string]any); ok {
			problems = append(problems, compareSchemaType(items, t.Elem(), path+"[]")...)
		} else {
			problems = append(problems, path+": an array without items in the schema")
		}
		return problems
	case t.Kind() != reflect.Struct || t == timeType || t == textType:
		return problems
	}
	props, _ := s["properties"].(map[string]any)
	if props == nil {
		return append(problems, fmt.Sprintf("%s: Go struct %s, the schema has no properties", path, t))
	}
	required := map[string]bool{}
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			required[r.(string)] = true
		}
	}
	seen := map[string]bool{}
	for _, f := range jsonFields(t) {
		seen[f.name] = true
		p := path + "." + f.name
		sub, ok := props[f.name].(map[string]any)
		if !ok {
			problems = append(problems, p+": written by Go, not in the schema")
			continue
		}
		switch {
		case !f.omitEmpty && !required[f.name]:
			problems = append(problems, p+": always written by Go, not required by the schema")
		case f.omitEmpty && required[f.name]:
			problems = append(problems, p+": omitempty in Go, required by the schema")
		}
		problems = append(problems, compareSchemaType(sub, f.typ, p)...)
	}
	for name := range props {
		if !seen[name] {
			problems = append(problems, path+"."+name+": in the schema, not written by Go")
		}
	}
	for name := range required {
		if !seen[name] {
			problems = append(problems, path+"."+name+": required by the schema, not written by Go")
		}
	}
	return problems
}

func readSchema(t *testing.T, file string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("schemas", file))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return m
}

// TestSchemasMatchGoTypes: every shipped schema has exactly the fields of
// the Go type its events are marshalled from, at every level, both ways;
// what Go always writes is required, what it may omit is not; the JSON
// types agree.
func TestSchemasMatchGoTypes(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("schemas", "*.json"))
	if len(files) != len(schemaTypes) {
		t.Fatalf("schemas %v, Go types for %d", files, len(schemaTypes))
	}
	for _, f := range files {
		name := filepath.Base(f)
		typ, ok := schemaTypes[name]
		if !ok {
			t.Errorf("%s: no Go type", name)
			continue
		}
		if problems := compareSchemaType(readSchema(t, name), typ, ""); len(problems) > 0 {
			sort.Strings(problems)
			t.Errorf("%s against %s:\n  %s", name, typ, strings.Join(problems, "\n  "))
		}
	}
}

// TestSchemaComparisonCatchesDrift: the comparison itself sees a field
// dropped, one added, a required one made optional and a type changed.
func TestSchemaComparisonCatchesDrift(t *testing.T) {
	typ := schemaTypes["patrold.finding.v1.json"]
	for name, c := range map[string]struct {
		mutate func(s map[string]any)
		want   string
	}{
		"dropped": {func(s map[string]any) { delete(s["properties"].(map[string]any), "recurrence") }, ".recurrence: written by Go, not in the schema"},
		"added": {func(s map[string]any) {
			s["properties"].(map[string]any)["finding"].(map[string]any)["properties"].(map[string]any)["priority"] = map[string]any{"type": "string"}
		}, ".finding.priority: in the schema, not written by Go"},
		"optional": {func(s map[string]any) { s["required"] = []any{"finding", "reason"} }, ".recurrence: always written by Go, not required by the schema"},
		"retyped": {func(s map[string]any) {
			s["properties"].(map[string]any)["recurrence"] = map[string]any{"type": "string"}
		}, ".recurrence: schema type string, Go int writes [integer number]"},
	} {
		s := readSchema(t, "patrold.finding.v1.json")
		c.mutate(s)
		got := compareSchemaType(s, typ, "")
		if !slices.Contains(got, c.want) {
			t.Errorf("%s: problems %q, want %q among them", name, got, c.want)
		}
	}
}

// TestSchemasAreAdditive: no schema forbids unknown fields, so a field a
// later v1 publisher adds (at any level) still validates.
func TestSchemasAreAdditive(t *testing.T) {
	schemas := compileSchemas(t)
	var walk func(path string, s map[string]any)
	walk = func(path string, s map[string]any) {
		if ap, ok := s["additionalProperties"].(bool); ok && !ap {
			t.Errorf("%s forbids unknown fields", path)
		}
		for k, v := range s {
			switch x := v.(type) {
			case map[string]any:
				walk(path+"."+k, x)
			}
		}
	}
	for name := range schemaTypes {
		s := readSchema(t, name)
		walk(name, s)
		if d, _ := s["description"].(string); !strings.Contains(d, "a consumer must ignore fields it does not know") {
			t.Errorf("%s: the description does not say fields are only added: %q", name, d)
		}
	}
	doc := readDoc(t, "NATS.md")
	data, _ := docExamples(t, doc)
	var m map[string]any
	if err := json.Unmarshal(data["patrold.finding.opened"], &m); err != nil {
		t.Fatal(err)
	}
	m["added_later"] = 1
	m["finding"].(map[string]any)["added_later"] = "x"
	raw, _ := json.Marshal(m)
	if err := validate(schemas["patrold.finding.v1.json"], raw); err != nil {
		t.Errorf("a finding event with added fields: %v", err)
	}
}

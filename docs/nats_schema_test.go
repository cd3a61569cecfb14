package docs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/patrol"
)

// schemaFor maps a CloudEvents type to the schema file of its data.
func schemaFor(typ string) string {
	switch {
	case strings.HasPrefix(typ, "patrold.finding."):
		return "patrold.finding.v1.json"
	case strings.HasPrefix(typ, "patrold.approval."):
		return "patrold.approval.v1.json"
	}
	return typ + ".v1.json"
}

func compileSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	out := map[string]*jsonschema.Schema{}
	files, _ := filepath.Glob(filepath.Join("schemas", "*.json"))
	if len(files) != len(schemaTypes) {
		t.Fatalf("schemas: %v", files)
	}
	for _, f := range files {
		doc, err := jsonschema.UnmarshalJSON(mustOpen(t, f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := c.AddResource(f, doc); err != nil {
			t.Fatal(err)
		}
		s, err := c.Compile(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = s
	}
	return out
}

func mustOpen(t *testing.T, name string) *bytes.Reader {
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(data)
}

func validate(s *jsonschema.Schema, data []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return s.Validate(v)
}

var wireExample = regexp.MustCompile("(?s)<!-- wire:(\\S+) (envelope|data) -->\\s*```json\\n(.*?)```")

// docExamples returns the marked JSON examples of NATS.md by type, each
// as the event's data (an envelope example also as the whole envelope).
func docExamples(t *testing.T, doc string) (data, envelopes map[string][]byte) {
	t.Helper()
	data, envelopes = map[string][]byte{}, map[string][]byte{}
	for _, m := range wireExample.FindAllStringSubmatch(doc, -1) {
		raw := []byte(m[3])
		if !json.Valid(raw) {
			t.Fatalf("NATS.md example %s is not JSON:\n%s", m[1], raw)
		}
		if m[2] == "envelope" {
			ev, err := contracts.DecodeEvent(raw)
			if err != nil {
				t.Fatalf("NATS.md example %s: %v", m[1], err)
			}
			if ev.Type != m[1] {
				t.Fatalf("NATS.md example marked %s has type %s", m[1], ev.Type)
			}
			envelopes[m[1]], raw = raw, ev.Data
		}
		data[m[1]] = raw
	}
	return data, envelopes
}

// mapPaths are objects keyed by data (counts by kind or change, action
// arguments): their keys are values, not fields, so they collapse to "{}".
var mapPaths = map[string]bool{".resources": true, ".findings": true, ".approval.args": true}

// shape flattens a JSON value to "path: kind" lines; array elements share
// the path "[]", object keys are joined with ".".
func shape(t *testing.T, raw []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			set[path+": object"] = true
			for k, e := range x {
				if mapPaths[path] {
					k = "{}"
				}
				walk(path+"."+k, e)
			}
		case []any:
			set[path+": array"] = true
			for _, e := range x {
				walk(path+"[]", e)
			}
		case string:
			set[path+": string"] = true
		case float64:
			set[path+": number"] = true
		case bool:
			set[path+": bool"] = true
		case nil:
			set[path+": null"] = true
		}
	}
	walk("", v)
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// sameShape reports the paths one side has and the other lacks.
func sameShape(a, b []string) (onlyA, onlyB []string) {
	in := func(xs []string) map[string]bool {
		m := map[string]bool{}
		for _, x := range xs {
			m[x] = true
		}
		return m
	}
	ma, mb := in(a), in(b)
	for _, x := range a {
		if !mb[x] {
			onlyA = append(onlyA, x)
		}
	}
	for _, x := range b {
		if !ma[x] {
			onlyB = append(onlyB, x)
		}
	}
	return onlyA, onlyB
}

// goEvents are the event data patrold builds for the types a patrol run
// does not publish (remediation outcome, approvals), marshalled from the
// very types the publishers use.
func goEvents(t *testing.T) map[string][]byte {
	t.Helper()
	at := time.Date(2025, 3, 1, 12, 0, 7, 0, time.UTC)
	out, err := json.Marshal(contracts.RemediationOutcome{SessionID: "01JNQ4X0", FindingID: "3f1c2a9b8d7e6f50", Attempt: 1,
		Outcome: contracts.OutcomeFixVerified, Driver: contracts.DriverPlaybook, Summary: "pruned", StartedAt: at, FinishedAt: at.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	ap, err := json.Marshal(assistant.ApprovalEventData{Event: contracts.ApprovalRequested, Approval: assistant.Approval{
		ID: "01JNQ4X2", FindingID: "3f1c2a9b8d7e6f50", SessionID: "01JNQ4X0", Attempt: 1, ResourceID: "storage/pve1/local-zfs",
		Action: "prune_snapshots", Args: json.RawMessage(`{"keep":3}`), Risk: assistant.RiskLow, State: assistant.ApprovalPending,
		CreatedAt: at, ExpiresAt: at.Add(5 * time.Minute)}})
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{"patrold.remediation.outcome": out, "patrold.approval.requested": ap}
}

// TestNATSExamplesMatchTheWire: the examples of NATS.md decode, match the
// shape of real events both ways (no field documented that the wire lacks,
// none on the wire the example leaves out), and both pass the event
// type's schema.
func TestNATSExamplesMatchTheWire(t *testing.T) {
	doc := readDoc(t, "NATS.md")
	data, envelopes := docExamples(t, doc)
	wire := wireEvents(t)
	real := map[string][]byte{}
	realEnv := map[string][]byte{}
	for typ, raw := range wire {
		ev, err := contracts.DecodeEvent(raw)
		if err != nil {
			t.Fatalf("real %s: %v", typ, err)
		}
		real[typ], realEnv[typ] = ev.Data, raw
	}
	for typ, raw := range goEvents(t) {
		real[typ] = raw
	}
	schemas := compileSchemas(t)
	want := []string{"patrold.finding.opened", "patrold.run.completed", "patrold.remediation.request", "patrold.remediation.outcome", "patrold.approval.requested"}
	for _, typ := range want {
		doc, ok := data[typ]
		if !ok {
			t.Errorf("NATS.md has no example for %s", typ)
			continue
		}
		onlyDoc, onlyWire := sameShape(shape(t, doc), shape(t, real[typ]))
		if len(onlyDoc)+len(onlyWire) > 0 {
			t.Errorf("%s: documented but not on the wire: %v; on the wire but not documented: %v\nwire: %s", typ, onlyDoc, onlyWire, real[typ])
		}
		s := schemas[schemaFor(typ)]
		for name, raw := range map[string][]byte{"NATS.md example": doc, "real event": real[typ]} {
			if err := validate(s, raw); err != nil {
				t.Errorf("%s %s against %s: %v", typ, name, schemaFor(typ), err)
			}
		}
	}
	for typ, env := range envelopes {
		onlyDoc, onlyWire := sameShape(shape(t, env), shape(t, realEnv[typ]))
		if len(onlyDoc)+len(onlyWire) > 0 {
			t.Errorf("%s envelope: documented only %v, wire only %v", typ, onlyDoc, onlyWire)
		}
	}
	// The recurrence of a first opening is 1, in the example and on the wire.
	for name, raw := range map[string][]byte{"example": data["patrold.finding.opened"], "wire": real["patrold.finding.opened"]} {
		var d findings.FindingEventData
		if err := json.Unmarshal(raw, &d); err != nil || d.Reason != findings.ReasonFirst || d.Recurrence != 1 || d.Finding.ID == "" {
			t.Errorf("%s finding event: %+v %v", name, d, err)
		}
	}
}

// TestSchemaEnumsMatchCode: the enumerations of the schemas are the code's,
// both ways.
func TestSchemaEnumsMatchCode(t *testing.T) {
	read := func(file string) map[string]any {
		var m map[string]any
		data, _ := os.ReadFile(filepath.Join("schemas", file))
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return m
	}
	enum := func(m map[string]any, path ...string) []string {
		var cur any = m
		for _, p := range path {
			cur = cur.(map[string]any)[p]
		}
		var out []string
		for _, v := range cur.(map[string]any)["enum"].([]any) {
			out = append(out, v.(string))
		}
		sort.Strings(out)
		return out
	}
	strs := func(xs ...any) []string {
		var out []string
		for _, x := range xs {
			out = append(out, fmt.Sprint(x))
		}
		sort.Strings(out)
		return out
	}
	fnd := read("patrold.finding.v1.json")
	var outcomes, events []any
	for _, o := range contracts.Outcomes {
		outcomes = append(outcomes, o)
	}
	for _, e := range contracts.ApprovalEvents {
		events = append(events, e)
	}
	var triggers []any
	for _, tr := range patrol.RunTriggers {
		triggers = append(triggers, tr)
	}
	var reasons []any
	for _, r := range findings.Reasons {
		reasons = append(reasons, r)
	}
	var sev, cat []any
	for _, s := range contracts.Severities {
		sev = append(sev, s)
	}
	for _, c := range contracts.Categories {
		cat = append(cat, c)
	}
	cases := []struct {
		name      string
		got, want []string
	}{
		{"finding reason", enum(fnd, "properties", "reason"), strs(reasons...)},
		{"finding severity", enum(fnd, "properties", "finding", "properties", "severity"), strs(sev...)},
		{"finding category", enum(fnd, "properties", "finding", "properties", "category"), strs(cat...)},
		{"outcome", enum(read("patrold.remediation.outcome.v1.json"), "properties", "outcome"), strs(outcomes...)},
		{"approval event", enum(read("patrold.approval.v1.json"), "properties", "event"), strs(events...)},
		{"run trigger", enum(read("patrold.run.completed.v1.json"), "properties", "trigger"), strs(triggers...)},
	}
	for _, c := range cases {
		if strings.Join(c.got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: schema %v, code %v", c.name, c.got, c.want)
		}
	}
}

// TestNATSWireGuardFailsOnDrift: a field added to or dropped from the
// finding event is caught by the shape comparison; the schema rejects a
// dropped or moved field and accepts an added one (v1 is additive).
func TestNATSWireGuardFailsOnDrift(t *testing.T) {
	doc := readDoc(t, "NATS.md")
	data, _ := docExamples(t, doc)
	orig := data["patrold.finding.opened"]
	s := compileSchemas(t)["patrold.finding.v1.json"]
	for name, mutate := range map[string]func(map[string]any){
		"added":   func(m map[string]any) { m["finding"].(map[string]any)["priority"] = "p1" },
		"dropped": func(m map[string]any) { delete(m, "recurrence") },
		"moved": func(m map[string]any) {
			f := m["finding"].(map[string]any)
			m["key"] = f["key"]
			delete(f, "key")
		},
	} {
		var m map[string]any
		json.Unmarshal(orig, &m)
		mutate(m)
		changed, _ := json.Marshal(m)
		a, b := sameShape(shape(t, orig), shape(t, changed))
		if len(a)+len(b) == 0 {
			t.Errorf("%s: shape comparison saw no change", name)
		}
		err := validate(s, changed)
		switch {
		case name == "added" && err != nil:
			t.Errorf("added: the schema rejected an added field: %v", err)
		case name != "added" && err == nil:
			t.Errorf("%s: the schema accepted it", name)
		}
	}
}

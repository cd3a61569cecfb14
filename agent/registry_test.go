package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func nop(context.Context, json.RawMessage) (any, error) { return "ok", nil }

const actionSchema = `{"type":"object","properties":{"op":{"type":"string"},"id":{"type":"string"}}}`

func discriminated() Tool {
	return Tool{
		Name: "guest", Schema: json.RawMessage(actionSchema), Discriminator: "op",
		Cases:  map[string]ToolKind{"status": KindRead, "find": KindResolve, "restart": KindWrite},
		Target: TargetInfrastructure, Authority: &testAuthority{}, Handler: nop,
	}
}

func TestClassifyFailsClosed(t *testing.T) {
	reg, err := NewRegistry(
		discriminated(),
		Tool{Name: "get_resource", Kind: KindResolve, Handler: nop},
		Tool{Name: "report_finding", Kind: KindWrite, Target: TargetPatrolState, Handler: nop},
	)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, args string
		kind       ToolKind
		target     WriteTarget
	}{
		{"get_resource", `{}`, KindResolve, ""},
		{"guest", `{"op":"status"}`, KindRead, ""},
		{"guest", `{"op":"find"}`, KindResolve, ""},
		{"guest", `{"op":"restart"}`, KindWrite, TargetInfrastructure},
		{"guest", `{"op":"format"}`, KindWrite, TargetInfrastructure},
		{"guest", `{}`, KindWrite, TargetInfrastructure},
		{"guest", `{"op":1}`, KindWrite, TargetInfrastructure},
		{"guest", `not json`, KindWrite, TargetInfrastructure},
		{"unknown_tool", `{}`, KindWrite, TargetInfrastructure},
		{"report_finding", `{}`, KindWrite, TargetPatrolState},
	}
	for _, c := range cases {
		kind, target := reg.Classify(c.name, json.RawMessage(c.args))
		if kind != c.kind || target != c.target {
			t.Errorf("%s %s: %s/%s, want %s/%s", c.name, c.args, kind, target, c.kind, c.target)
		}
		if reg.ClassifyToolCall(c.name, json.RawMessage(c.args)) != c.kind {
			t.Errorf("ClassifyToolCall %s disagrees", c.name)
		}
	}
	if ClassifyToolCall("get_resource", nil) != KindWrite {
		t.Error("registry-less classification must fail closed")
	}
}

func TestRegistryRejects(t *testing.T) {
	good := Tool{Name: "get", Kind: KindRead, Handler: nop}
	cases := []struct {
		tools []Tool
		want  string
	}{
		{[]Tool{{Name: "Bad Name", Handler: nop}}, "tools[0].name:"},
		{[]Tool{{Name: "get", Kind: KindRead}}, "tools[0].handler: required"},
		{[]Tool{good, good}, `tools[1].name: "get" registered twice`},
		{[]Tool{{Name: "w", Kind: KindWrite, Handler: nop}}, "tools[0].target:"},
		{[]Tool{{Name: "k", Kind: ToolKind(7), Handler: nop}}, "tools[0].kind: invalid"},
		{[]Tool{{Name: "d", Discriminator: "op", Target: TargetInfrastructure, Handler: nop}}, "tools[0].cases: required"},
		{[]Tool{{Name: "d", Discriminator: "op", Cases: map[string]ToolKind{"a": KindRead}, Handler: nop, Schema: json.RawMessage(actionSchema)}}, "tools[0].target:"},
		{[]Tool{{Name: "d", Discriminator: "nope", Cases: map[string]ToolKind{"a": KindRead}, Target: TargetInfrastructure, Authority: &testAuthority{}, Handler: nop, Schema: json.RawMessage(actionSchema)}}, "tools[0].discriminator:"},
		{[]Tool{{Name: "w", Kind: KindWrite, Target: TargetInfrastructure, Handler: nop}}, "tools[0].authority: required"},
		{[]Tool{{Name: "w", Kind: KindWrite, Target: TargetInfrastructure, Authority: &testAuthority{}, Idempotent: true, Handler: nop}}, "tools[0].idempotent: a tool that can write is never retried"},
		{[]Tool{{Name: "w", Kind: KindWrite, Target: TargetPatrolState, Idempotent: true, Handler: nop}}, "tools[0].idempotent:"},
		{[]Tool{{Name: "q", Kind: KindUserInput, Verifies: true, Handler: nop}}, "tools[0].verifies: only a resolve or read tool"},
		{[]Tool{{Name: "s", Kind: KindRead, Handler: nop, Schema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","maxLength":0}}}`)}}, "properties.a.maxLength: must be at least 1"},
		{[]Tool{{Name: "s", Kind: KindRead, Handler: nop, Schema: json.RawMessage(`{"type":"object","oneOf":[]}`)}}, "tools[0].schema: oneOf: unsupported keyword"},
		{[]Tool{{Name: "t", Kind: KindRead, Handler: nop, Timeout: -1}}, "tools[0].timeout:"},
	}
	for _, c := range cases {
		_, err := NewRegistry(c.tools...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
	reg, _ := NewRegistry(good)
	if err := (Profile{Name: "p", Tools: []string{"get", "gone"}}).Validate(reg); err == nil || !strings.Contains(err.Error(), `profile.tools[1]: "gone" is not registered`) {
		t.Errorf("profile: %v", err)
	}
	if err := (Profile{Tools: []string{"get"}}).Validate(reg); err == nil || !strings.Contains(err.Error(), "profile.name: required") {
		t.Errorf("profile name: %v", err)
	}
}

func TestManifest(t *testing.T) {
	reg, err := NewRegistry(discriminated(), Tool{Name: "get_resource", Description: "find", Kind: KindResolve, Idempotent: true, Handler: nop},
		Tool{Name: "report_finding", Kind: KindWrite, Target: TargetPatrolState, Handler: nop})
	if err != nil {
		t.Fatal(err)
	}
	c := Manifest(reg, Profile{Name: "detection", Tools: []string{"get_resource", "report_finding"}})
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back Capabilities
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Profile != "detection" || len(back.Tools) != 2 || back.Tools[0].Kind != "resolve" || !back.Tools[0].Idempotent ||
		back.Tools[1].WriteTarget != TargetPatrolState || back.Tools[0].TimeoutMs != DefaultToolTimeout.Milliseconds() {
		t.Fatalf("manifest: %s", b)
	}
	if len(back.Codes) != len(codeCatalogue) || back.Limits.MaxParallelTools != MaxParallelTools || back.Limits.LoopThreshold != LoopThreshold {
		t.Fatalf("codes or limits: %s", b)
	}
	if strings.Join(back.Kinds, ",") != "resolve,read,write,user_input" || strings.Join(back.States, ",") != "RESOLVING,READING,WRITING,VERIFYING" {
		t.Fatalf("kinds/states: %v %v", back.Kinds, back.States)
	}
	d := Manifest(reg, Profile{Name: "remediation", Tools: []string{"guest"}})
	if d.Tools[0].Kind != "discriminated" || d.Tools[0].Cases["restart"] != "write" || d.Tools[0].WriteTarget != TargetInfrastructure {
		t.Fatalf("discriminated: %+v", d.Tools[0])
	}
}

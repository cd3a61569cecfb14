package agent

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/patrold/patrold/model"
)

func allowOnly(names ...string) func(string) bool {
	return func(n string) bool {
		for _, x := range names {
			if x == n {
				return true
			}
		}
		return false
	}
}

// TestLeakedToolCalls: every shape a weak model writes a call in is
// recognised and removed, names outside the allow-list stay text, and a
// call cut off is a call whose arguments are not an object.
func TestLeakedToolCalls(t *testing.T) {
	allowed := allowOnly("get_resource", "report_finding")
	call := func(id, name, args string) model.ToolCall {
		return model.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
	}
	cases := []struct {
		name, text string
		calls      []model.ToolCall
		rest       string
	}{
		{"plain text", "All resources look fine.", nil, "All resources look fine."},
		{"bare object", `Let me look. {"name": "get_resource", "arguments": {"id": "vm/101"}}`,
			[]model.ToolCall{call("leak_3_1", "get_resource", `{"id":"vm/101"}`)}, "Let me look."},
		{"code fence", "I will read it:\n```json\n{\"name\":\"get_resource\",\"parameters\":{\"id\":\"node/pve1\"}}\n```\nthen report.",
			[]model.ToolCall{call("leak_3_1", "get_resource", `{"id":"node/pve1"}`)}, "I will read it:\n\nthen report."},
		{"tool_call tags, string arguments", `<tool_call>{"name": "report_finding", "arguments": "{\"resource_id\": \"vm/1\"}"}</tool_call>`,
			[]model.ToolCall{call("leak_3_1", "report_finding", `{"resource_id":"vm/1"}`)}, ""},
		{"openai function shape, two in an array", `[{"type":"function","function":{"name":"get_resource","arguments":"{\"id\":\"a\"}"}}, {"type":"function","function":{"name":"get_resource","arguments":{"id":"b"}}}]`,
			[]model.ToolCall{call("leak_3_1", "get_resource", `{"id":"a"}`), call("leak_3_2", "get_resource", `{"id":"b"}`)}, ""},
		{"not in the allow-list", `Example: {"name": "restart_everything", "arguments": {}}`, nil, `Example: {"name": "restart_everything", "arguments": {}}`},
		{"ordinary JSON", `The config is {"name": "web", "port": 80}.`, nil, `The config is {"name": "web", "port": 80}.`},
		{"cut off", `Filing now {"name": "report_finding", "arguments": {"resource_id": "vm/1", "title": "disk`,
			[]model.ToolCall{call("leak_3_1", "report_finding", `"{\"name\": \"report_finding\", \"arguments\": {\"resource_id\": \"vm/1\", \"title\": \"disk"`)}, "Filing now"},
		{"cut off after a whole one", `{"name":"get_resource","arguments":{"id":"x"}} {"name":"report_finding","arguments":{`,
			[]model.ToolCall{call("leak_3_1", "get_resource", `{"id":"x"}`), call("leak_3_2", "report_finding", `"{\"name\":\"report_finding\",\"arguments\":{"`)}, ""},
	}
	for _, c := range cases {
		calls, rest := LeakedToolCalls(3, c.text, allowed)
		if !reflect.DeepEqual(calls, c.calls) || rest != c.rest {
			t.Errorf("%s:\ncalls %s\nrest  %q\nwant  %s\n      %q", c.name, show(calls), rest, show(c.calls), c.rest)
		}
	}
}

func show(calls []model.ToolCall) string {
	var b strings.Builder
	for _, c := range calls {
		b.WriteString(c.ID + " " + c.Name + " " + string(c.Arguments) + "; ")
	}
	return b.String()
}

// TestPrecheckWellFormed: arguments that are not one JSON object are
// refused with MALFORMED_TOOL_CALL before the schema is consulted, with
// what arrived quoted (bounded); an object, empty or null passes.
func TestPrecheckWellFormed(t *testing.T) {
	var cnt calls
	s := newTestSession(t, testTools(&cnt), &scripted{}, nil)
	long := strings.Repeat("x", 300)
	cases := map[string]string{
		`"{\"id\": \"vm/1"`:   `{"id": "vm/1`,
		`"` + long + `"`:      strings.Repeat("x", MaxMalformedEcho) + "...",
		`[{"id":"vm/1"}]`:     `[{"id":"vm/1"}]`,
		`{"id":"vm/1"}`:       "",
		`{"_invalid":"x"} {}`: `{"_invalid":"x"} {}`,
	}
	for args, echo := range cases {
		r := s.ExecuteBatch(context.Background(), 1, []model.ToolCall{tc("get_resource", args)}).Results[0]
		if echo == "" {
			if r.Step.Status != StatusOK {
				t.Errorf("%.40s: %s", args, r.Content)
			}
			continue
		}
		e := decodeEnvelope(t, r.Content)
		want := "arguments: not one complete JSON object (cut off or malformed); send the call again with its arguments as a JSON object"
		if r.Step.Code != CodeMalformedToolCall || e.Error.Message != want || e.Error.Details["check"] != string(CheckWellFormed) || e.Error.Details["received"] != echo {
			t.Errorf("%.40s: step %+v error %+v", args, r.Step, e.Error)
		}
	}
	if cnt.get("get_resource") != 1 {
		t.Fatalf("handler ran %d times, want once (the well-formed call)", cnt.get("get_resource"))
	}
}

// TestLeakedCallsRunThroughThePrechecks: a call written into the text is
// made through the same pre-checks as a proper one. The stored reply
// holds the call and not its text. A cut-off call gets
// MALFORMED_TOOL_CALL back. A leaked write is judged by the same checks
// as a proper one.
func TestLeakedCallsRunThroughThePrechecks(t *testing.T) {
	var cnt calls
	p := &scripted{turns: []model.Response{
		text("Reading first.\n```json\n{\"name\": \"get_resource\", \"arguments\": {\"id\": \"vm/1\"}}\n```"),
		text(`{"name": "report_finding", "arguments": {"id": "vm/1"}} and {"name": "get_resource", "arguments": {"id": "vm/`),
		text("All done."),
	}}
	s := newTestSession(t, testTools(&cnt), p, func(o *Options) { o.MaxTurns = 5 })
	res, err := s.Run(context.Background(), []model.Message{{Role: model.RoleUser, Content: "go"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := stepCodes(res.Steps), []string{"1:get_resource:ok:", "2:report_finding:ok:", "2:get_resource:blocked:MALFORMED_TOOL_CALL"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("steps %v, want %v", got, want)
	}
	if cnt.get("get_resource") != 1 || cnt.get("report_finding") != 1 {
		t.Fatalf("handlers: %v", cnt.n)
	}
	reply := res.Messages[1]
	if reply.Content != "Reading first." || len(reply.ToolCalls) != 1 || reply.ToolCalls[0].ID != "leak_1_1" || res.FinalAnswer != "All done." {
		t.Fatalf("stored reply %+v, final %q", reply, res.FinalAnswer)
	}
	for _, m := range res.Messages {
		if m.Role == model.RoleAssistant && strings.Contains(m.Content, `"name"`) {
			t.Fatalf("a leaked call stayed in the stored text: %q", m.Content)
		}
	}
}

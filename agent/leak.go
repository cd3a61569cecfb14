package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/patrold/patrold/model"
)

// Weak models often write a tool call into their text instead of making
// it (docs/ASSISTANT_SAFETY.md "Tool calls written as text"). A JSON object
// in the text that names a tool of the closed allow-list (the tools this
// session's profile offers) is such a call:
//
//   - {"name": T, "arguments": {...}} or "parameters" instead of
//     "arguments", the arguments an object or a string holding one;
//   - {"type": "function", "function": {"name": T, "arguments": ...}};
//
// in or out of a code fence or <tool_call> tags. An object naming any other
// name is ordinary text and stays. A call that starts like one and does
// not decode (cut off, malformed) is a call too, with its arguments not an
// object: the well_formed pre-check refuses it with MALFORMED_TOOL_CALL.
// Recognised calls are removed from the text. A streamed answer
// (model.openai.stream) is assembled by the provider before the runtime
// reads it, so a call split across chunks is whole text again here.

// leakStart matches where an object naming a tool would begin.
var leakStart = regexp.MustCompile(`^\{\s*"(?:name|type|function)"\s*:`)

// leakName finds the tool name of a call that did not decode.
var leakName = regexp.MustCompile(`^\{\s*(?:"type"\s*:\s*"function"\s*,\s*)?(?:"function"\s*:\s*\{\s*)?"name"\s*:\s*"([A-Za-z0-9_-]{1,64})"`)

// emptyWrappers are what a removed call leaves around it.
var emptyWrappers = regexp.MustCompile("(?s)```[a-zA-Z]*\\s*```|<tool_call>\\s*</tool_call>|<tool_calls>\\s*</tool_calls>|\\[\\s*(?:,\\s*)*\\]")

type leakedCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Params    json.RawMessage `json:"parameters"`
	Type      string          `json:"type"`
	Function  *struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// leakedArgs returns a call's arguments as NormalizeArguments would: an
// object, or a string holding what was not one.
func leakedArgs(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return model.NormalizeArguments([]byte(s))
		}
	}
	if len(raw) == 0 {
		return json.RawMessage(`{}`)
	}
	return model.NormalizeArguments(raw)
}

// LeakedToolCalls returns the tool calls written into text (names for
// which allowed is true), with ids leak_<turn>_<n>, and the text without
// them.
func LeakedToolCalls(turn int, text string, allowed func(string) bool) ([]model.ToolCall, string) {
	if !strings.Contains(text, "{") {
		return nil, text
	}
	var calls []model.ToolCall
	var rest strings.Builder
	last := 0
	for i := 0; i < len(text); i++ {
		if text[i] != '{' || !leakStart.MatchString(text[i:]) {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(text[i:]))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			m := leakName.FindStringSubmatch(text[i:])
			if m == nil || !allowed(m[1]) {
				continue
			}
			// Cut off or malformed: the rest of the text is the call.
			calls = append(calls, model.ToolCall{Name: m[1], Arguments: model.NormalizeArguments([]byte(text[i:]))})
			rest.WriteString(text[last:i])
			last = len(text)
			break
		}
		end := i + int(dec.InputOffset())
		var lc leakedCall
		if json.Unmarshal(raw, &lc) != nil {
			continue
		}
		name, args := lc.Name, lc.Arguments
		if lc.Function != nil && name == "" {
			name, args = lc.Function.Name, lc.Function.Arguments
		}
		if len(args) == 0 {
			args = lc.Params
		}
		if name == "" || !allowed(name) {
			continue
		}
		calls = append(calls, model.ToolCall{Name: name, Arguments: leakedArgs(args)})
		rest.WriteString(text[last:i])
		last = end
		i = end - 1
	}
	if len(calls) == 0 {
		return nil, text
	}
	rest.WriteString(text[last:])
	for i := range calls {
		calls[i].ID = fmt.Sprintf("leak_%d_%d", turn, i+1)
	}
	return calls, strings.TrimSpace(emptyWrappers.ReplaceAllString(rest.String(), ""))
}

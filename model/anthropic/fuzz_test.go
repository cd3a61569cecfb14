package anthropic

import (
	"encoding/json"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go"
)

// FuzzFromMessage feeds arbitrary response bodies through the SDK's
// decoder and ours: no panic, and an accepted response always carries
// named tool calls with valid JSON arguments.
func FuzzFromMessage(f *testing.F) {
	for _, s := range []string{textMessage, toolMessage, `{}`, `{"type":"message","content":[{"type":"tool_use","name":"x","input":"str"}]}`,
		`{"type":"message","content":[{"type":"text"}],"stop_reason":"end_turn"}`, `{"content":null,"usage":{"input_tokens":-5}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var msg sdk.Message
		if json.Unmarshal(data, &msg) != nil {
			return
		}
		resp, err := fromMessage(&msg, "m")
		if err != nil {
			return
		}
		for _, c := range resp.ToolCalls {
			if c.Name == "" || c.ID == "" || !json.Valid(c.Arguments) {
				t.Fatalf("accepted bad call %+v %q", c, c.Arguments)
			}
		}
		if _, err := json.Marshal(resp); err != nil {
			t.Fatalf("response not serialisable for the recording: %v", err)
		}
	})
}

package openai

import (
	"encoding/json"
	"testing"

	sdk "github.com/openai/openai-go/v3"

	"github.com/patrold/patrold/model"
)

// FuzzFromCompletion feeds arbitrary response bodies through the SDK's
// decoder and ours: no panic, and an accepted response always carries
// named tool calls with valid JSON arguments.
func FuzzFromCompletion(f *testing.F) {
	for _, s := range []string{textCompletion, toolCompletion, `{}`, `{"choices":[{}]}`, `{"choices":[{"message":{"tool_calls":[{"function":{"name":"x","arguments":"{"}}]}}]}`,
		`{"choices":[{"finish_reason":"stop","message":{"content":null,"refusal":"no"}}]}`, `{"choices":null,"usage":{"prompt_tokens":-1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var cc sdk.ChatCompletion
		if json.Unmarshal(data, &cc) != nil {
			return
		}
		resp, err := fromCompletion(&cc, "m", model.Request{})
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

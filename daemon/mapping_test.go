package daemon

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/config"
)

// TestAssistantSectionsMapped: the assistant and actions sections reach
// the assistant whole, and the values both sides declare agree.
func TestAssistantSectionsMapped(t *testing.T) {
	cfg, err := config.Load([]byte(`assistant: {max_turns: 7, approval_ttl: 2m, max_tokens: 900}
actions:
  - {name: restart, description: Restart it, command: [systemctl, restart, x], risk: low, kinds: [vm], signals: ["*"]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := assistantSettings(cfg), (assistant.Settings{Enabled: true, MaxTurns: 7, ApprovalTTL: 2 * time.Minute, MaxTokens: 900}); got != want {
		t.Fatalf("assistant settings %+v, want %+v", got, want)
	}
	want := []assistant.ActionSpec{{Name: "restart", Description: "Restart it", Command: []string{"systemctl", "restart", "x"},
		Risk: "low", Kinds: []string{"vm"}, Signals: []string{"*"}}}
	if got := actionSpecs(cfg); !reflect.DeepEqual(got, want) {
		t.Fatalf("actions %+v, want %+v", got, want)
	}
	if !slices.Equal(config.ActionKinds, assistant.ActionKinds) || config.AnySignal != assistant.AnySignal ||
		config.DefaultAssistantMaxTokens != assistant.DefaultMaxTokens {
		t.Fatalf("config and assistant disagree: kinds %v / %v, any %q / %q, max tokens %d / %d", config.ActionKinds, assistant.ActionKinds,
			config.AnySignal, assistant.AnySignal, config.DefaultAssistantMaxTokens, assistant.DefaultMaxTokens)
	}
}

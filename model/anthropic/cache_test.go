package anthropic

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/patrold/patrold/internal/modelfake"
	"github.com/patrold/patrold/model"
)

// TestPromptCacheBreakpointsAndUsage: the system block and the last block
// of the conversation carry cache_control, and a caching server's counts
// come back as the whole usage: the second request reads what the first
// wrote and writes only what it added.
func TestPromptCacheBreakpointsAndUsage(t *testing.T) {
	srv := modelfake.Anthropic(t, modelfake.Turn{Text: "Quiet."}, modelfake.Turn{Text: "Still quiet."})
	srv.Caching = true
	c := newClient(t, srv.URL, nil)
	// Tokens as the fake counts them (every string of a block, 4 bytes a
	// token): system 4+400 bytes = 101, "Look at the fleet." 4+18 = 6,
	// "Quiet." and "Again." 4+6 = 3 each.
	req := model.Request{System: strings.Repeat("s", 400), Messages: []model.Message{{Role: model.RoleUser, Content: "Look at the fleet."}}}
	first, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if first.Usage != (model.Usage{InputTokens: 107, OutputTokens: modelfake.UsageOutput, CacheWriteTokens: 107}) {
		t.Fatalf("first usage = %+v", first.Usage)
	}
	req.Messages = append(req.Messages, model.Message{Role: model.RoleAssistant, Content: "Quiet."}, model.Message{Role: model.RoleUser, Content: "Again."})
	second, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if second.Usage != (model.Usage{InputTokens: 113, OutputTokens: modelfake.UsageOutput, CacheReadTokens: 107, CacheWriteTokens: 6}) {
		t.Fatalf("second usage = %+v", second.Usage)
	}
	var body struct {
		System   []map[string]any `json:"system"`
		Messages []struct {
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(srv.Requests()[1], &body); err != nil {
		t.Fatal(err)
	}
	mark := func(b map[string]any) string { raw, _ := json.Marshal(b["cache_control"]); return string(raw) }
	last := body.Messages[2].Content[0]
	if mark(body.System[0]) != `{"type":"ephemeral"}` || mark(last) != `{"type":"ephemeral"}` || mark(body.Messages[0].Content[0]) != "null" {
		t.Fatalf("breakpoints: system %s, last %s, first message %s", mark(body.System[0]), mark(last), mark(body.Messages[0].Content[0]))
	}
}

// TestPromptCacheOnTheLastToolWithoutSystem: with no system text the last
// tool ends the stable prefix.
func TestPromptCacheOnTheLastToolWithoutSystem(t *testing.T) {
	srv := newFakeServer(t, jsonReply(200, textMessage))
	c := newClient(t, srv.URL, nil)
	req := model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "Look."}},
		Tools: []model.ToolDef{{Name: "a"}, {Name: "b"}}}
	if _, err := c.Chat(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	body := <-srv.bodies
	tools := body["tools"].([]any)
	if tools[0].(map[string]any)["cache_control"] != nil || tools[1].(map[string]any)["cache_control"].(map[string]any)["type"] != "ephemeral" {
		t.Fatalf("tools = %v", tools)
	}
}

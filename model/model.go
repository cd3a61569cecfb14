// Package model is patrold's one small interface to language models: a
// chat-with-tools call returning text, tool calls and usage. Provider
// implementations live in subpackages (openai, anthropic, script).
package model

import (
	"context"
	"encoding/json"
)

// Role is the author of a message.
type Role string

// Message roles. The system policy is not a message: it travels in
// Request.System so no provider can mistake other text for policy.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of the conversation.
type Message struct {
	Role Role `json:"role"`
	// Content is the text of a user or assistant message, or the result of
	// a tool call (Role tool).
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID links a tool result to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// ToolName is the tool a tool result came from.
	ToolName string `json:"tool_name,omitempty"`
}

// ToolCall is one tool invocation requested by the model.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolDef advertises a tool to the model.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // JSON Schema of the arguments object
}

// Request is one chat call.
type Request struct {
	System    string    `json:"system"`
	Messages  []Message `json:"messages"`
	Tools     []ToolDef `json:"tools,omitempty"`
	MaxTokens int       `json:"max_tokens,omitempty"` // 0: provider default
}

// Usage counts the tokens of one call. InputTokens is every input token
// the model read; the cache counts are parts of it, priced apart
// (docs/MODELS.md#prompt-caching).
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	// CacheReadTokens are input tokens read from the provider's prompt
	// cache.
	CacheReadTokens int `json:"cache_read_tokens,omitempty"`
	// CacheWriteTokens are input tokens written to the prompt cache
	// (Anthropic reports them; OpenAI caches without a charge).
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
}

// Add returns u + o.
func (u Usage) Add(o Usage) Usage {
	return Usage{InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens,
		CacheReadTokens: u.CacheReadTokens + o.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens}
}

// Sub returns u - o: the usage of the calls between two running totals.
func (u Usage) Sub(o Usage) Usage {
	return Usage{InputTokens: u.InputTokens - o.InputTokens, OutputTokens: u.OutputTokens - o.OutputTokens,
		CacheReadTokens: u.CacheReadTokens - o.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens - o.CacheWriteTokens}
}

// Uncached returns the input tokens neither read from nor written to the
// cache (never below 0, whatever a server reports).
func (u Usage) Uncached() int {
	return max(u.InputTokens-u.CacheReadTokens-u.CacheWriteTokens, 0)
}

// Response is the model's answer to one Request.
type Response struct {
	Text       string     `json:"text,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	Usage      Usage      `json:"usage"`
	Model      string     `json:"model,omitempty"`
	StopReason string     `json:"stop_reason,omitempty"`
}

// Provider is a language model behind one chat-with-tools call.
type Provider interface {
	// Name identifies the provider in metrics and records ("openai", ...).
	Name() string
	// Chat sends one request and returns the answer.
	Chat(ctx context.Context, req Request) (*Response, error)
}

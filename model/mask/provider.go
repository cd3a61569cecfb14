package mask

import (
	"context"
	"encoding/json"

	"github.com/patrold/patrold/model"
)

// Provider masks every request before it leaves and unmasks every answer
// before anything reads it. Every message and every tool call's
// arguments go out masked; the model's own earlier answers go with
// MaskEcho. The answer's text and tool-call arguments come back with the
// terms. The system text and the tool definitions are daemon-written and
// hold nothing collected from the fleet, so they go out as they are.
type Provider struct {
	Next   model.Provider
	Masker *Masker
}

var _ model.Provider = (*Provider)(nil)

// Name is the wrapped provider's name.
func (p *Provider) Name() string { return p.Next.Name() }

// Chat masks req, forwards it and unmasks the answer.
func (p *Provider) Chat(ctx context.Context, req model.Request) (*model.Response, error) {
	m := p.Masker
	out := model.Request{System: req.System, Tools: req.Tools, MaxTokens: req.MaxTokens,
		Messages: make([]model.Message, len(req.Messages))}
	for i, msg := range req.Messages {
		maskText := m.Mask
		if msg.Role == model.RoleAssistant {
			maskText = m.MaskEcho // the model's own words are not data
		}
		msg.Content = maskText(msg.Content)
		if msg.ToolCalls != nil {
			calls := make([]model.ToolCall, len(msg.ToolCalls))
			for j, c := range msg.ToolCalls {
				c.Arguments = json.RawMessage(maskText(string(c.Arguments)))
				calls[j] = c
			}
			msg.ToolCalls = calls
		}
		out.Messages[i] = msg
	}
	resp, err := p.Next.Chat(ctx, out)
	if resp == nil {
		return resp, err
	}
	back := *resp
	back.Text = m.Unmask(resp.Text)
	if resp.ToolCalls != nil {
		back.ToolCalls = make([]model.ToolCall, len(resp.ToolCalls))
		for i, c := range resp.ToolCalls {
			c.Arguments = m.UnmaskJSON(c.Arguments)
			back.ToolCalls[i] = c
		}
	}
	return &back, err
}

package prompt

import (
	"context"
	"errors"
	"fmt"

	"github.com/patrold/patrold/model"
)

// ErrContextFull stops a conversation that no longer fits the model's
// context window: a graceful stop, not a model failure.
var ErrContextFull = errors.New("conversation no longer fits the context window")

// Provider is the model.Provider an agent session (patrol stage or
// Assistant session) talks to. The session keeps its own plain message
// list. Provider folds every new message into one Conversation and sends
// only what the composer renders. That is the policy as the only system
// text, and untrusted text and tool results neutralised and fenced with a
// fresh nonce per request. Model text that repeats the policy is withheld
// before it is sent back. Runtime prompts (verification reminders, "an
// operator approved") are daemon text.
type Provider struct {
	Next  model.Provider
	Conv  *Conversation
	Guard *Disclosure
	// Window and MaxOutput, when Window > 0, keep every request within
	// the context window (Conversation.Fit): old tool results are cut
	// with a notice, and ErrContextFull ends a conversation that still
	// does not fit.
	Window, MaxOutput int
	// Skip is how many of the session's messages are already in Conv (an
	// opening composed before the session starts).
	Skip int
}

var _ model.Provider = (*Provider)(nil)

// Name is the wrapped provider's name.
func (p *Provider) Name() string { return p.Next.Name() }

// Chat folds the session's new messages into the conversation, renders the
// request and forwards it.
func (p *Provider) Chat(ctx context.Context, req model.Request) (*model.Response, error) {
	if p.Skip > len(req.Messages) {
		return nil, fmt.Errorf("compose: session history shrank from %d to %d messages", p.Skip, len(req.Messages))
	}
	for _, m := range req.Messages[p.Skip:] {
		switch m.Role {
		case model.RoleAssistant:
			text := m.Content
			if !p.Guard.Check(text) {
				text = WithheldText
			}
			p.Conv.Assistant(&model.Response{Text: text, ToolCalls: m.ToolCalls})
		case model.RoleTool:
			p.Conv.ToolResult(model.ToolCall{ID: m.ToolCallID, Name: m.ToolName}, m.Content)
		default:
			p.Conv.Instruct(m.Content)
		}
	}
	p.Skip = len(req.Messages)
	var rendered Prompt
	var err error
	if p.Window > 0 {
		rendered, err = p.Conv.Fit(req.Tools, req.MaxTokens, p.Window, p.MaxOutput)
	} else {
		rendered, err = p.Conv.Request(req.Tools, req.MaxTokens)
	}
	if err != nil {
		return nil, err
	}
	return p.Next.Chat(ctx, rendered.Request)
}

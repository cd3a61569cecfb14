package analyst

import (
	"context"
	"errors"
	"fmt"

	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/prompt"
)

// errContextFull stops a stage whose conversation no longer fits the
// model's context window. It is a graceful stop, not a model failure.
var errContextFull = errors.New("conversation no longer fits the context window")

// composed is the provider an agent session talks to. The session keeps
// its own plain message list; composed turns every request into one the
// prompt composer renders: the policy as the only system text, snapshot
// text and tool results neutralised and fenced with a fresh nonce. Only
// the composer builds what reaches the model.
type composed struct {
	next   model.Provider
	cv     *prompt.Conversation
	guard  *prompt.Disclosure
	window int // context window in tokens
	maxOut int
	// skip is how many of the session's messages are already in cv (the
	// stage's opening message is composed before the session starts).
	skip int
}

var _ model.Provider = (*composed)(nil)

func (c *composed) Name() string { return c.next.Name() }

// Chat folds the session's new messages into the conversation, renders
// the request and forwards it.
func (c *composed) Chat(ctx context.Context, req model.Request) (*model.Response, error) {
	if c.skip > len(req.Messages) {
		return nil, fmt.Errorf("compose: session history shrank from %d to %d messages", c.skip, len(req.Messages))
	}
	for _, m := range req.Messages[c.skip:] {
		switch m.Role {
		case model.RoleAssistant:
			text := m.Content
			if !c.guard.Check(text) {
				text = prompt.WithheldText
			}
			c.cv.Assistant(&model.Response{Text: text, ToolCalls: m.ToolCalls})
		case model.RoleTool:
			c.cv.ToolResult(model.ToolCall{ID: m.ToolCallID, Name: m.ToolName}, m.Content)
		default:
			// Runtime prompts (verification reminders) are daemon text.
			c.cv.Instruct(m.Content)
		}
	}
	c.skip = len(req.Messages)
	p, err := c.cv.Request(req.Tools, req.MaxTokens)
	if err != nil {
		return nil, err
	}
	if c.window > 0 && model.EstimateTokens(p.Request)+c.maxOut > c.window {
		return nil, errContextFull
	}
	return c.next.Chat(ctx, p.Request)
}

// countingTokens estimates the tokens a conversation part adds to a
// request: its text, its fence lines and the message overhead.
func countingTokens(text string) int {
	const fenceChars = 2*len("<<<UNTRUSTED kind=tool_result label=\"\" nonce=>>>") + 2*32 + 80
	return model.EstimateTextTokens(text) + (fenceChars+model.CharsPerToken-1)/model.CharsPerToken + model.MessageOverheadTokens
}

package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/patrold/patrold/model"
)

// params maps a model.Request onto the messages wire format. Tool results
// travel as tool_result blocks in a user message; consecutive messages of
// the same wire role are merged, so the parallel results of one turn share
// one user message as the API expects. Cache breakpoints mark the end of
// the stable prefix and of the conversation so far (markCache).
func (c *Client) params(req model.Request, maxOut int) (sdk.MessageNewParams, error) {
	p := sdk.MessageNewParams{Model: sdk.Model(c.Model()), MaxTokens: int64(maxOut)}
	if req.System != "" {
		p.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	for i, m := range req.Messages {
		role, blocks, err := toBlocks(m)
		if err != nil {
			return p, fmt.Errorf("messages[%d]: %w", i, err)
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(p.Messages); n > 0 && p.Messages[n-1].Role == role {
			p.Messages[n-1].Content = append(p.Messages[n-1].Content, blocks...)
			continue
		}
		p.Messages = append(p.Messages, sdk.MessageParam{Role: role, Content: blocks})
	}
	for i, t := range req.Tools {
		tool, err := toTool(t)
		if err != nil {
			return p, fmt.Errorf("tools[%d] (%s): %w", i, t.Name, err)
		}
		p.Tools = append(p.Tools, tool)
	}
	markCache(&p)
	return p, nil
}

// markCache sets the prompt cache breakpoints (docs/MODELS.md#prompt-caching).
// The API reads tools, then system, then messages. The system block ends
// the part every request of every run shares (the last tool when there is
// no system). The last block of the last message ends the conversation so
// far, which the next request of the same conversation repeats.
func markCache(p *sdk.MessageNewParams) {
	switch {
	case len(p.System) > 0:
		p.System[len(p.System)-1].CacheControl = sdk.NewCacheControlEphemeralParam()
	case len(p.Tools) > 0:
		if cc := p.Tools[len(p.Tools)-1].GetCacheControl(); cc != nil {
			*cc = sdk.NewCacheControlEphemeralParam()
		}
	}
	if n := len(p.Messages); n > 0 {
		blocks := p.Messages[n-1].Content
		if k := len(blocks); k > 0 {
			if cc := blocks[k-1].GetCacheControl(); cc != nil {
				*cc = sdk.NewCacheControlEphemeralParam()
			}
		}
	}
}

func toBlocks(m model.Message) (sdk.MessageParamRole, []sdk.ContentBlockParamUnion, error) {
	switch m.Role {
	case model.RoleUser:
		if m.Content == "" {
			return sdk.MessageParamRoleUser, nil, nil
		}
		return sdk.MessageParamRoleUser, []sdk.ContentBlockParamUnion{sdk.NewTextBlock(m.Content)}, nil
	case model.RoleTool:
		if m.ToolCallID == "" {
			return "", nil, errors.New("tool_call_id: required for a tool result")
		}
		return sdk.MessageParamRoleUser, []sdk.ContentBlockParamUnion{sdk.NewToolResultBlock(m.ToolCallID, m.Content, false)}, nil
	case model.RoleAssistant:
		var blocks []sdk.ContentBlockParamUnion
		if m.Content != "" {
			blocks = append(blocks, sdk.NewTextBlock(m.Content))
		}
		for _, tc := range m.ToolCalls {
			blocks = append(blocks, sdk.NewToolUseBlock(tc.ID, objectInput(tc.Arguments), tc.Name))
		}
		return sdk.MessageParamRoleAssistant, blocks, nil
	}
	return "", nil, fmt.Errorf("role: unknown role %q", m.Role)
}

// objectInput returns arguments as a JSON object: tool_use input must be one.
func objectInput(args json.RawMessage) json.RawMessage {
	norm := model.NormalizeArguments(args)
	if strings.HasPrefix(string(norm), "{") {
		return norm
	}
	wrapped, _ := json.Marshal(map[string]json.RawMessage{"_invalid_arguments": norm})
	return wrapped
}

func toTool(t model.ToolDef) (sdk.ToolUnionParam, error) {
	if t.Name == "" {
		return sdk.ToolUnionParam{}, errors.New("name: required")
	}
	schema := sdk.ToolInputSchemaParam{Properties: map[string]any{}}
	if len(t.Parameters) > 0 {
		var m map[string]any
		if err := json.Unmarshal(t.Parameters, &m); err != nil {
			return sdk.ToolUnionParam{}, fmt.Errorf("parameters: not a JSON object: %w", err)
		}
		for k, v := range m {
			switch k {
			case "type":
			case "properties":
				schema.Properties = v
			case "required":
				list, ok := v.([]any)
				if !ok {
					return sdk.ToolUnionParam{}, errors.New("parameters.required: not a list")
				}
				for _, r := range list {
					s, ok := r.(string)
					if !ok {
						return sdk.ToolUnionParam{}, errors.New("parameters.required: not a list of strings")
					}
					schema.Required = append(schema.Required, s)
				}
			default:
				if schema.ExtraFields == nil {
					schema.ExtraFields = map[string]any{}
				}
				schema.ExtraFields[k] = v
			}
		}
	}
	tool := sdk.ToolParam{Name: t.Name, InputSchema: schema}
	if t.Description != "" {
		tool.Description = param.NewOpt(t.Description)
	}
	return sdk.ToolUnionParam{OfTool: &tool}, nil
}

// fromMessage maps an API message to a model.Response. Thinking blocks are
// skipped; text blocks are joined; tool_use blocks become tool calls.
func fromMessage(msg *sdk.Message, configured string) (*model.Response, error) {
	if msg == nil {
		return nil, errors.New("empty response")
	}
	if msg.Type != "" && msg.Type != "message" {
		return nil, fmt.Errorf("type: %q is not a message", msg.Type)
	}
	resp := &model.Response{
		Model:      string(msg.Model),
		StopReason: string(msg.StopReason),
		// input_tokens counts only the input after the last breakpoint:
		// the cache reads and writes are the rest of what the model read.
		Usage: model.Usage{
			InputTokens:  int(msg.Usage.InputTokens + msg.Usage.CacheCreationInputTokens + msg.Usage.CacheReadInputTokens),
			OutputTokens: int(msg.Usage.OutputTokens),
			//mutate:anthropic-cache-read-counted ./model/anthropic ^(TestChatText|TestPromptCacheBreakpointsAndUsage)$
			CacheReadTokens:  int(msg.Usage.CacheReadInputTokens),
			CacheWriteTokens: int(msg.Usage.CacheCreationInputTokens),
		},
	}
	if resp.Model == "" {
		resp.Model = configured
	}
	var texts []string
	for i, b := range msg.Content {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "tool_use":
			if b.Name == "" {
				return nil, fmt.Errorf("content[%d].name: missing in tool_use block", i)
			}
			resp.ToolCalls = append(resp.ToolCalls, model.ToolCall{
				ID: model.ToolCallID(b.ID, i), Name: b.Name, Arguments: model.NormalizeArguments(b.Input),
			})
		case "thinking", "redacted_thinking":
		case "":
			return nil, fmt.Errorf("content[%d].type: missing", i)
		default:
			return nil, fmt.Errorf("content[%d].type: unsupported block %q", i, b.Type)
		}
	}
	resp.Text = strings.Join(texts, "\n")
	if len(msg.Content) == 0 && resp.StopReason == "" {
		return nil, errors.New("content: no blocks and no stop_reason")
	}
	return resp, nil
}

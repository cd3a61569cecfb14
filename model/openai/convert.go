package openai

import (
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/patrold/patrold/model"
)

// params maps a model.Request onto the chat completions wire format.
func (c *Client) params(req model.Request, maxOut int) (sdk.ChatCompletionNewParams, error) {
	p := sdk.ChatCompletionNewParams{Model: shared.ChatModel(c.Model())}
	if c.legacyMax {
		p.MaxTokens = param.NewOpt(int64(maxOut))
	} else {
		p.MaxCompletionTokens = param.NewOpt(int64(maxOut))
	}
	if req.System != "" {
		p.Messages = append(p.Messages, sdk.SystemMessage(req.System))
	}
	for i, m := range req.Messages {
		msg, err := toMessage(m)
		if err != nil {
			return p, fmt.Errorf("messages[%d]: %w", i, err)
		}
		p.Messages = append(p.Messages, msg)
	}
	for i, t := range req.Tools {
		tool, err := toTool(t)
		if err != nil {
			return p, fmt.Errorf("tools[%d] (%s): %w", i, t.Name, err)
		}
		p.Tools = append(p.Tools, tool)
	}
	return p, nil
}

func toMessage(m model.Message) (sdk.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case model.RoleUser:
		return sdk.UserMessage(m.Content), nil
	case model.RoleTool:
		if m.ToolCallID == "" {
			return sdk.ChatCompletionMessageParamUnion{}, errors.New("tool_call_id: required for a tool result")
		}
		return sdk.ToolMessage(m.Content, m.ToolCallID), nil
	case model.RoleAssistant:
		var a sdk.ChatCompletionAssistantMessageParam
		if m.Content != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = param.NewOpt(m.Content)
		}
		for _, tc := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID: tc.ID,
					Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      tc.Name,
						Arguments: string(model.NormalizeArguments(tc.Arguments)),
					},
				},
			})
		}
		return sdk.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	}
	return sdk.ChatCompletionMessageParamUnion{}, fmt.Errorf("role: unknown role %q", m.Role)
}

func toTool(t model.ToolDef) (sdk.ChatCompletionToolUnionParam, error) {
	if t.Name == "" {
		return sdk.ChatCompletionToolUnionParam{}, errors.New("name: required")
	}
	def := shared.FunctionDefinitionParam{Name: t.Name}
	if t.Description != "" {
		def.Description = param.NewOpt(t.Description)
	}
	if len(t.Parameters) > 0 {
		var schema map[string]any
		if err := json.Unmarshal(t.Parameters, &schema); err != nil {
			return sdk.ChatCompletionToolUnionParam{}, fmt.Errorf("parameters: not a JSON object: %w", err)
		}
		def.Parameters = shared.FunctionParameters(schema)
	} else {
		def.Parameters = shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
	}
	return sdk.ChatCompletionFunctionTool(def), nil
}

// fromCompletion maps the first choice of a completion to a model.Response.
func fromCompletion(cc *sdk.ChatCompletion, configured string, req model.Request) (*model.Response, error) {
	if cc == nil || len(cc.Choices) == 0 {
		return nil, errors.New("response has no choices")
	}
	choice := cc.Choices[0]
	msg := choice.Message
	resp := &model.Response{
		Text:       msg.Content,
		Model:      cc.Model,
		StopReason: choice.FinishReason,
		// prompt_tokens includes the cached ones; caching writes are free.
		Usage: model.Usage{
			InputTokens:  int(cc.Usage.PromptTokens),
			OutputTokens: int(cc.Usage.CompletionTokens),
			//mutate:openai-cache-read-counted ./model/openai ^TestChatText$
			CacheReadTokens: int(cc.Usage.PromptTokensDetails.CachedTokens),
		},
	}
	if resp.Model == "" {
		resp.Model = configured
	}
	if resp.Text == "" && msg.Refusal != "" {
		resp.Text = msg.Refusal
		resp.StopReason = "refusal"
	}
	for i, tc := range msg.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			return nil, fmt.Errorf("choices[0].message.tool_calls[%d].type: unsupported %q", i, tc.Type)
		}
		if tc.Function.Name == "" {
			return nil, fmt.Errorf("choices[0].message.tool_calls[%d].function.name: missing", i)
		}
		resp.ToolCalls = append(resp.ToolCalls, model.ToolCall{
			ID:        model.ToolCallID(tc.ID, i),
			Name:      tc.Function.Name,
			Arguments: model.NormalizeArguments([]byte(tc.Function.Arguments)),
		})
	}
	if resp.Text == "" && len(resp.ToolCalls) == 0 && choice.FinishReason == "" {
		return nil, errors.New("choices[0]: no message content, tool calls or finish reason")
	}
	if resp.Usage == (model.Usage{}) {
		// Some compatible servers omit usage; budget with an estimate.
		resp.Usage = model.Usage{
			InputTokens:  model.EstimateTokens(req),
			OutputTokens: model.EstimateTextTokens(resp.Text) + len(resp.ToolCalls)*model.MessageOverheadTokens,
		}
	}
	return resp, nil
}

// Package openai is the model.Provider for OpenAI's chat completions API
// and every server that speaks it (Ollama, vLLM, llama.cpp server).
package openai

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/patrold/patrold/model"
)

// Name is the provider name used in metrics, records and errors.
const Name = model.ProviderOpenAI

// DefaultMaxRetryDelay caps a server-directed Retry-After: a longer wait
// returns the 429 to the caller (and the circuit breaker) instead.
const DefaultMaxRetryDelay = model.DefaultMaxRetryDelay

// officialHost is the one host that wants max_completion_tokens; the
// compatible servers understand max_tokens.
const officialHost = "api.openai.com"

// Options configure a Client (the `model.openai` section and the key).
type Options = model.ClientOptions

// Client is a model.Provider backed by the chat completions API.
type Client struct {
	model.HTTPClient
	svc       sdk.ChatCompletionService
	legacyMax bool // send max_tokens instead of max_completion_tokens
}

var _ model.Provider = (*Client)(nil)

// New validates opts and builds a client. It reads no environment
// variables: everything comes from opts.
func New(opts Options) (*Client, error) {
	hc, err := model.NewHTTPClient(Name, opts, model.EndpointOptions{BaseURL: model.DefaultOpenAIBaseURL,
		ContextWindow: model.DefaultOpenAIContextWindow, MaxOutputTokens: model.DefaultMaxOutputTokens})
	if err != nil {
		return nil, err
	}
	e := hc.Endpoint()
	u, _ := url.Parse(e.BaseURL)
	reqOpts := []option.RequestOption{
		option.WithBaseURL(e.BaseURL),
		option.WithHTTPClient(hc.HTTP),
		option.WithMaxRetries(e.MaxRetries),
		option.WithMaxRetryDelay(hc.MaxRetryDelay),
	}
	if key := hc.APIKey(); key != "" {
		reqOpts = append(reqOpts, option.WithAPIKey(key.Reveal()))
	}
	if e.Timeout > 0 {
		reqOpts = append(reqOpts, option.WithRequestTimeout(e.Timeout))
	}
	return &Client{
		HTTPClient: hc,
		svc:        sdk.NewChatCompletionService(reqOpts...),
		legacyMax:  !strings.EqualFold(u.Hostname(), officialHost),
	}, nil
}

// Chat sends one chat completion request.
func (c *Client) Chat(ctx context.Context, req model.Request) (*model.Response, error) {
	return model.SendChat(ctx, &c.HTTPClient, req, model.Wire[sdk.ChatCompletionNewParams, *sdk.ChatCompletion]{
		Params: c.params,
		Send: func(ctx context.Context, p sdk.ChatCompletionNewParams, raw **http.Response) (*sdk.ChatCompletion, error) {
			if c.Endpoint().Stream {
				return c.stream(ctx, p, raw)
			}
			return c.svc.New(ctx, p, option.WithResponseInto(raw))
		},
		Malformed: func(err error) bool { return errors.Is(err, errStreamOrder) },
		Decode:    func(r *sdk.ChatCompletion) (*model.Response, error) { return fromCompletion(r, c.Model(), req) },
		APIError:  apiError,
	})
}

// apiError reads the status and message of an error the API returned.
func apiError(err error) (int, string, bool) {
	var apiErr *sdk.Error
	if !errors.As(err, &apiErr) {
		return 0, "", false
	}
	msg := apiErr.Message
	if msg == "" {
		msg = http.StatusText(apiErr.StatusCode)
	}
	return apiErr.StatusCode, msg, true
}

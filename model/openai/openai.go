// Package openai is the model.Provider for OpenAI's chat completions API
// and every server that speaks it (Ollama, vLLM, llama.cpp server).
package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/patrold/patrold/model"
)

// Name is the provider name used in metrics, records and errors.
const Name = "openai"

// DefaultMaxRetryDelay caps a server-directed Retry-After: a longer wait
// returns the 429 to the caller (and the circuit breaker) instead.
const DefaultMaxRetryDelay = 30 * time.Second

// officialHost is the one host that wants max_completion_tokens; the
// compatible servers understand max_tokens.
const officialHost = "api.openai.com"

// Options configure a Client. Endpoint carries the `model.openai` section;
// APIKey is the key read from api_key_file or api_key_env.
type Options struct {
	Endpoint model.EndpointOptions
	APIKey   model.Secret
	// HTTPClient is used for every request; a fresh client when nil.
	HTTPClient *http.Client
	// MaxRetryDelay caps server-directed waits; DefaultMaxRetryDelay when 0.
	MaxRetryDelay time.Duration
}

// Client is a model.Provider backed by the chat completions API.
type Client struct {
	svc       sdk.ChatCompletionService
	endpoint  model.EndpointOptions
	apiKey    model.Secret
	legacyMax bool // send max_tokens instead of max_completion_tokens
}

var _ model.Provider = (*Client)(nil)

// New validates opts and builds a client. It reads no environment
// variables: everything comes from opts.
func New(opts Options) (*Client, error) {
	e := opts.Endpoint
	if e.BaseURL == "" {
		e.BaseURL = model.DefaultOpenAIBaseURL
	}
	if e.ContextWindow == 0 {
		e.ContextWindow = model.DefaultOpenAIContextWindow
	}
	if e.MaxOutputTokens == 0 {
		e.MaxOutputTokens = model.DefaultMaxOutputTokens
	}
	if err := (model.Options{Provider: model.ProviderOpenAI, OpenAI: e}).Validate(); err != nil {
		return nil, err
	}
	u, _ := url.Parse(e.BaseURL)
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	retryDelay := opts.MaxRetryDelay
	if retryDelay <= 0 {
		retryDelay = DefaultMaxRetryDelay
	}
	reqOpts := []option.RequestOption{
		option.WithBaseURL(e.BaseURL),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(e.MaxRetries),
		option.WithMaxRetryDelay(retryDelay),
	}
	if opts.APIKey != "" {
		reqOpts = append(reqOpts, option.WithAPIKey(opts.APIKey.Reveal()))
	}
	if e.Timeout > 0 {
		reqOpts = append(reqOpts, option.WithRequestTimeout(e.Timeout))
	}
	return &Client{
		svc:       sdk.NewChatCompletionService(reqOpts...),
		endpoint:  e,
		apiKey:    opts.APIKey,
		legacyMax: !strings.EqualFold(u.Hostname(), officialHost),
	}, nil
}

// Name implements model.Provider.
func (c *Client) Name() string { return Name }

// Model returns the configured model name (for pricing).
func (c *Client) Model() string { return c.endpoint.Model }

// ContextWindow returns the configured context window in tokens.
func (c *Client) ContextWindow() int { return c.endpoint.ContextWindow }

// Chat sends one chat completion request.
func (c *Client) Chat(ctx context.Context, req model.Request) (*model.Response, error) {
	maxOut, err := model.FitOutput(Name, req, c.endpoint.MaxOutputTokens, c.endpoint.ContextWindow)
	if err != nil {
		return nil, err
	}
	params, err := c.params(req, maxOut)
	if err != nil {
		return nil, model.NewError(Name, model.ErrorBadRequest, 0, err.Error(), nil, c.secret())
	}
	var raw *http.Response
	var completion *sdk.ChatCompletion
	if c.endpoint.Stream {
		completion, err = c.stream(ctx, params, &raw)
	} else {
		completion, err = c.svc.New(ctx, params, option.WithResponseInto(&raw))
	}
	if errors.Is(err, errStreamOrder) {
		return nil, model.NewError(Name, model.ErrorMalformed, statusOf(raw), err.Error(), nil, c.secret())
	}
	if err != nil {
		return nil, c.classify(ctx, raw, err)
	}
	resp, err := fromCompletion(completion, c.endpoint.Model, req)
	if err != nil {
		return nil, model.NewError(Name, model.ErrorMalformed, statusOf(raw), err.Error(), nil, c.secret())
	}
	return resp, nil
}

func (c *Client) secret() string { return c.apiKey.Reveal() }

// classify maps an SDK error to a *model.Error without the key.
func (c *Client) classify(ctx context.Context, raw *http.Response, err error) error {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		msg := apiErr.Message
		if msg == "" {
			msg = http.StatusText(apiErr.StatusCode)
		}
		return model.NewError(Name, model.KindForStatus(apiErr.StatusCode), apiErr.StatusCode, msg, nil, c.secret())
	}
	if ctx.Err() == nil && raw != nil && raw.StatusCode >= 200 && raw.StatusCode < 300 {
		return model.NewError(Name, model.ErrorMalformed, raw.StatusCode, "decode response: "+err.Error(), nil, c.secret())
	}
	kind := model.ClassifyTransport(ctx, err)
	msg := "request failed"
	switch {
	case kind == model.ErrorCanceled:
		msg = "request canceled"
	case errors.Is(err, context.DeadlineExceeded):
		msg = fmt.Sprintf("request timed out after %s", c.endpoint.Timeout)
	default:
		msg = "request failed: " + err.Error()
	}
	return model.NewError(Name, kind, 0, msg, err, c.secret())
}

func statusOf(r *http.Response) int {
	if r == nil {
		return 0
	}
	return r.StatusCode
}

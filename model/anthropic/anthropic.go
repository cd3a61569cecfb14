// Package anthropic is the model.Provider for Anthropic's messages API
// (tool_use and tool_result content blocks).
package anthropic

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/patrold/patrold/model"
)

// Name is the provider name used in metrics, records and errors.
const Name = "anthropic"

// DefaultMaxRetryDelay caps a server-directed Retry-After: a longer wait
// returns the 429 to the caller (and the circuit breaker) instead.
const DefaultMaxRetryDelay = 30 * time.Second

// Options configure a Client. Endpoint carries the `model.anthropic`
// section; APIKey is the key read from api_key_file or api_key_env.
type Options struct {
	Endpoint model.EndpointOptions
	APIKey   model.Secret
	// HTTPClient is used for every request; a fresh client when nil.
	HTTPClient *http.Client
	// MaxRetryDelay caps server-directed waits; DefaultMaxRetryDelay when 0.
	MaxRetryDelay time.Duration
}

// Client is a model.Provider backed by the messages API.
type Client struct {
	svc      sdk.MessageService
	endpoint model.EndpointOptions
	apiKey   model.Secret
}

var _ model.Provider = (*Client)(nil)

// New validates opts and builds a client. It reads no environment
// variables or credential profiles: everything comes from opts.
func New(opts Options) (*Client, error) {
	e := opts.Endpoint
	if e.BaseURL == "" {
		e.BaseURL = model.DefaultAnthropicBaseURL
	}
	if e.ContextWindow == 0 {
		e.ContextWindow = model.DefaultAnthropicContextWindow
	}
	if e.MaxOutputTokens == 0 {
		e.MaxOutputTokens = model.DefaultMaxOutputTokens
	}
	if e.Timeout == 0 {
		e.Timeout = model.DefaultTimeout
	}
	if err := (model.Options{Provider: model.ProviderAnthropic, Anthropic: e}).Validate(); err != nil {
		return nil, err
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	reqOpts := []option.RequestOption{
		option.WithBaseURL(e.BaseURL),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(e.MaxRetries),
		// Always set: the SDK otherwise derives a timeout from max_tokens.
		option.WithRequestTimeout(e.Timeout),
		option.WithMiddleware(capRetryAfter(cmp.Or(opts.MaxRetryDelay, DefaultMaxRetryDelay))),
	}
	if opts.APIKey != "" {
		reqOpts = append(reqOpts, option.WithAPIKey(opts.APIKey.Reveal()))
	}
	return &Client{svc: sdk.NewMessageService(reqOpts...), endpoint: e, apiKey: opts.APIKey}, nil
}

// Name implements model.Provider.
func (c *Client) Name() string { return Name }

// Model returns the configured model name (for pricing).
func (c *Client) Model() string { return c.endpoint.Model }

// ContextWindow returns the configured context window in tokens.
func (c *Client) ContextWindow() int { return c.endpoint.ContextWindow }

// Chat sends one messages request.
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
	var msg *sdk.Message
	if c.endpoint.Stream {
		msg, err = c.stream(ctx, params, &raw)
	} else {
		msg, err = c.svc.New(ctx, params, option.WithResponseInto(&raw))
	}
	if errors.Is(err, errStreamOrder) {
		return nil, model.NewError(Name, model.ErrorMalformed, statusOf(raw), err.Error(), nil, c.secret())
	}
	if err != nil {
		return nil, c.classify(ctx, raw, err)
	}
	resp, err := fromMessage(msg, c.endpoint.Model)
	if err != nil {
		return nil, model.NewError(Name, model.ErrorMalformed, statusOf(raw), err.Error(), nil, c.secret())
	}
	return resp, nil
}

func (c *Client) secret() string { return c.apiKey.Reveal() }

// classify maps an SDK error to a *model.Error without the key. The SDK's
// own error text carries the raw body, so only the parsed message is used.
func (c *Client) classify(ctx context.Context, raw *http.Response, err error) error {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		return model.NewError(Name, model.KindForStatus(apiErr.StatusCode), apiErr.StatusCode,
			errorMessage(apiErr.RawJSON(), apiErr.StatusCode), nil, c.secret())
	}
	if ctx.Err() == nil && raw != nil && raw.StatusCode >= 200 && raw.StatusCode < 300 {
		return model.NewError(Name, model.ErrorMalformed, raw.StatusCode, "decode response: "+err.Error(), nil, c.secret())
	}
	kind := model.ClassifyTransport(ctx, err)
	var msg string
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

// errorMessage extracts error.type and error.message from an error body.
func errorMessage(body string, status int) string {
	var env struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(body), &env) != nil || env.Error.Message == "" {
		return http.StatusText(status)
	}
	if env.Error.Type != "" {
		return env.Error.Type + ": " + env.Error.Message
	}
	return env.Error.Message
}

func statusOf(r *http.Response) int {
	if r == nil {
		return 0
	}
	return r.StatusCode
}

// capRetryAfter refuses a retry the server wants delayed longer than limit:
// the SDK would otherwise sleep for whatever Retry-After says.
func capRetryAfter(limit time.Duration) option.Middleware {
	return func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(r)
		if err != nil || res == nil {
			return res, err
		}
		wait := time.Duration(-1)
		if ms, perr := strconv.ParseFloat(res.Header.Get("Retry-After-Ms"), 64); perr == nil {
			wait = time.Duration(ms * float64(time.Millisecond))
		} else if s, perr := strconv.ParseFloat(res.Header.Get("Retry-After"), 64); perr == nil {
			wait = time.Duration(s * float64(time.Second))
		} else if at, perr := http.ParseTime(res.Header.Get("Retry-After")); perr == nil {
			wait = time.Until(at)
		}
		if wait > limit {
			res.Header.Set("X-Should-Retry", "false")
		}
		return res, nil
	}
}

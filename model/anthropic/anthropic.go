// Package anthropic is the model.Provider for Anthropic's messages API
// (tool_use and tool_result content blocks).
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/patrold/patrold/model"
)

// Name is the provider name used in metrics, records and errors.
const Name = model.ProviderAnthropic

// DefaultMaxRetryDelay caps a server-directed Retry-After: a longer wait
// returns the 429 to the caller (and the circuit breaker) instead.
const DefaultMaxRetryDelay = model.DefaultMaxRetryDelay

// Options configure a Client (the `model.anthropic` section and the key).
type Options = model.ClientOptions

// Client is a model.Provider backed by the messages API.
type Client struct {
	model.HTTPClient
	svc sdk.MessageService
}

var _ model.Provider = (*Client)(nil)

// New validates opts and builds a client. It reads no environment
// variables or credential profiles: everything comes from opts.
func New(opts Options) (*Client, error) {
	hc, err := model.NewHTTPClient(Name, opts, model.EndpointOptions{BaseURL: model.DefaultAnthropicBaseURL,
		ContextWindow: model.DefaultAnthropicContextWindow, MaxOutputTokens: model.DefaultMaxOutputTokens,
		Timeout: model.DefaultTimeout})
	if err != nil {
		return nil, err
	}
	e := hc.Endpoint()
	reqOpts := []option.RequestOption{
		option.WithBaseURL(e.BaseURL),
		option.WithHTTPClient(hc.HTTP),
		option.WithMaxRetries(e.MaxRetries),
		// Always set: the SDK otherwise derives a timeout from max_tokens.
		option.WithRequestTimeout(e.Timeout),
		option.WithMiddleware(capRetryAfter(hc.MaxRetryDelay)),
	}
	if key := hc.APIKey(); key != "" {
		reqOpts = append(reqOpts, option.WithAPIKey(key.Reveal()))
	}
	return &Client{HTTPClient: hc, svc: sdk.NewMessageService(reqOpts...)}, nil
}

// Chat sends one messages request.
func (c *Client) Chat(ctx context.Context, req model.Request) (*model.Response, error) {
	return model.SendChat(ctx, &c.HTTPClient, req, model.Wire[sdk.MessageNewParams, *sdk.Message]{
		Params: c.params,
		Send: func(ctx context.Context, p sdk.MessageNewParams, raw **http.Response) (*sdk.Message, error) {
			if c.Endpoint().Stream {
				return c.stream(ctx, p, raw)
			}
			return c.svc.New(ctx, p, option.WithResponseInto(raw))
		},
		Malformed: func(err error) bool { return errors.Is(err, errStreamOrder) },
		Decode:    func(m *sdk.Message) (*model.Response, error) { return fromMessage(m, c.Model()) },
		APIError:  apiError,
	})
}

// apiError reads the status and message of an error the API returned.
// The SDK's own error text carries the raw body, so only the parsed
// message is used.
func apiError(err error) (int, string, bool) {
	var apiErr *sdk.Error
	if !errors.As(err, &apiErr) {
		return 0, "", false
	}
	return apiErr.StatusCode, errorMessage(apiErr.RawJSON(), apiErr.StatusCode), true
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

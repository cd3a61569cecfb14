package model

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// DefaultMaxRetryDelay caps a server-directed Retry-After: a longer wait
// returns the 429 to the caller (and the circuit breaker) instead.
const DefaultMaxRetryDelay = 30 * time.Second

// ClientOptions configure an HTTP provider's client. Endpoint carries the
// provider's section (model.openai, model.anthropic); APIKey is the key
// read from api_key_file or api_key_env.
type ClientOptions struct {
	Endpoint EndpointOptions
	APIKey   Secret
	// HTTPClient is used for every request; a fresh client when nil.
	HTTPClient *http.Client
	// MaxRetryDelay caps server-directed waits; DefaultMaxRetryDelay when 0.
	MaxRetryDelay time.Duration
}

// HTTPClient is the part every HTTP provider's client shares: its name,
// its endpoint with the defaults filled in, and its key. A provider embeds
// it for Name, Model and ContextWindow and sends each request through
// SendChat.
type HTTPClient struct {
	name     string
	endpoint EndpointOptions
	apiKey   Secret
	// HTTP is the client every request uses.
	HTTP *http.Client
	// MaxRetryDelay is the cap on server-directed waits.
	MaxRetryDelay time.Duration
}

// NewHTTPClient fills the zero fields of o.Endpoint from defaults (those
// of defaults that are not zero) and validates the endpoint as provider's
// section. It reads no environment variable: everything comes from o.
func NewHTTPClient(provider string, o ClientOptions, defaults EndpointOptions) (HTTPClient, error) {
	e := o.Endpoint
	fill(&e.BaseURL, defaults.BaseURL)
	fill(&e.ContextWindow, defaults.ContextWindow)
	fill(&e.MaxOutputTokens, defaults.MaxOutputTokens)
	fill(&e.Timeout, defaults.Timeout)
	section := Options{Provider: provider}
	switch provider {
	case ProviderOpenAI:
		section.OpenAI = e
	case ProviderAnthropic:
		section.Anthropic = e
	default:
		return HTTPClient{}, fmt.Errorf("model: %q is no HTTP provider", provider)
	}
	if err := section.Validate(); err != nil {
		return HTTPClient{}, err
	}
	c := HTTPClient{name: provider, endpoint: e, apiKey: o.APIKey, HTTP: o.HTTPClient, MaxRetryDelay: o.MaxRetryDelay}
	if c.HTTP == nil {
		c.HTTP = &http.Client{}
	}
	if c.MaxRetryDelay <= 0 {
		c.MaxRetryDelay = DefaultMaxRetryDelay
	}
	return c, nil
}

func fill[T comparable](p *T, def T) {
	var zero T
	if *p == zero {
		*p = def
	}
}

// Name implements Provider.
func (c *HTTPClient) Name() string { return c.name }

// Model returns the configured model name (for pricing).
func (c *HTTPClient) Model() string { return c.endpoint.Model }

// ContextWindow returns the configured context window in tokens.
func (c *HTTPClient) ContextWindow() int { return c.endpoint.ContextWindow }

// Endpoint is the endpoint with its defaults filled in.
func (c *HTTPClient) Endpoint() EndpointOptions { return c.endpoint }

// APIKey is the key (empty: none); reveal it only into the request.
func (c *HTTPClient) APIKey() Secret { return c.apiKey }

// Wire is one provider's side of an exchange, in its SDK's types.
type Wire[P, R any] struct {
	// Params maps the request onto the wire, with maxOut output tokens.
	Params func(req Request, maxOut int) (P, error)
	// Send sends params; raw receives the HTTP response when there is one.
	Send func(ctx context.Context, params P, raw **http.Response) (R, error)
	// Malformed reports a send error that is the response's fault (a
	// stream that does not continue), not the transport's; nil: none is.
	Malformed func(err error) bool
	// Decode maps the wire response back.
	Decode func(resp R) (*Response, error)
	// APIError reports the status and message of an error the API
	// returned (ok false: not an API error).
	APIError func(err error) (status int, msg string, ok bool)
}

// SendChat sends req through w: the output bound fitted into the context
// window, the request built, sent and decoded, and every failure a *Error
// of c's provider without the key:
//   - a request that cannot be built: ErrorBadRequest;
//   - an API error: its status's kind and message;
//   - a 2xx the SDK cannot decode, a send error Malformed reports, or a
//     response Decode refuses: ErrorMalformed;
//   - anything else: the transport's kind (canceled, timed out, failed).
func SendChat[P, R any](ctx context.Context, c *HTTPClient, req Request, w Wire[P, R]) (*Response, error) {
	maxOut, err := FitOutput(c.name, req, c.endpoint.MaxOutputTokens, c.endpoint.ContextWindow)
	if err != nil {
		return nil, err
	}
	params, err := w.Params(req, maxOut)
	if err != nil {
		return nil, NewError(c.name, ErrorBadRequest, 0, err.Error(), nil, c.apiKey.Reveal())
	}
	var raw *http.Response
	out, err := w.Send(ctx, params, &raw)
	if err != nil && w.Malformed != nil && w.Malformed(err) {
		return nil, NewError(c.name, ErrorMalformed, statusOf(raw), err.Error(), nil, c.apiKey.Reveal())
	}
	if err != nil {
		return nil, c.classify(ctx, raw, err, w.APIError)
	}
	resp, err := w.Decode(out)
	if err != nil {
		return nil, NewError(c.name, ErrorMalformed, statusOf(raw), err.Error(), nil, c.apiKey.Reveal())
	}
	return resp, nil
}

func statusOf(r *http.Response) int {
	if r == nil {
		return 0
	}
	return r.StatusCode
}

// classify maps a failed send to a *Error without the key.
func (c *HTTPClient) classify(ctx context.Context, raw *http.Response, err error, apiError func(error) (int, string, bool)) error {
	if status, msg, ok := apiError(err); ok {
		return NewError(c.name, KindForStatus(status), status, msg, nil, c.apiKey.Reveal())
	}
	if ctx.Err() == nil && raw != nil && raw.StatusCode >= 200 && raw.StatusCode < 300 {
		return NewError(c.name, ErrorMalformed, raw.StatusCode, "decode response: "+err.Error(), nil, c.apiKey.Reveal())
	}
	kind := ClassifyTransport(ctx, err)
	var msg string
	switch {
	case kind == ErrorCanceled:
		msg = "request canceled"
	case errors.Is(err, context.DeadlineExceeded):
		msg = fmt.Sprintf("request timed out after %s", c.endpoint.Timeout)
	default:
		msg = "request failed: " + err.Error()
	}
	return NewError(c.name, kind, 0, msg, err, c.apiKey.Reveal())
}

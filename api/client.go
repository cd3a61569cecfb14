package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client defaults.
const (
	// DefaultClientTimeout bounds one call when NewClient gets no http.Client.
	DefaultClientTimeout = 30 * time.Second
	// DefaultPingTimeout bounds Ping, so the CLI decides quickly whether
	// the daemon runs.
	DefaultPingTimeout = 2 * time.Second
	// maxResponseBytes bounds a response body the client reads.
	maxResponseBytes = 64 << 20
)

// Client calls a patrold API. Non-2xx answers come back as *Error carrying
// the API's code (Code is empty when the body was not an API error, e.g.
// from a proxy).
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
}

// NewClient returns a client for baseURL (e.g. "http://127.0.0.1:9477").
// token may be empty for reads against a daemon with no tokens; httpClient
// nil uses one with DefaultClientTimeout.
func NewClient(baseURL, token string, httpClient *http.Client) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("api client: base URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("api client: base URL: %q is not an http(s)://host:port URL", baseURL)
	}
	if httpClient == nil {
		httpClient = &http.Client{Timeout: DefaultClientTimeout}
	}
	return &Client{base: u, token: token, http: httpClient}, nil
}

// pathID escapes one id for a path segment.
func pathID(field, id string) (string, error) {
	if id == "" || id == "." || id == ".." {
		return "", fmt.Errorf("api client: %s: %q is not a valid id", field, id)
	}
	return url.PathEscape(id), nil
}

// do sends one request. body nil sends none; out nil discards the answer,
// *json.RawMessage keeps it verbatim.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	u, err := url.Parse(c.base.String() + path)
	if err != nil {
		return fmt.Errorf("api client: %w", err)
	}
	if len(query) > 0 {
		u.RawQuery = query.Encode()
	}
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("api client: encode body: %w", err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return fmt.Errorf("api client: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("api client: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("api client: %s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return responseError(resp.StatusCode, data)
	}
	switch o := out.(type) {
	case nil:
		return nil
	case *json.RawMessage:
		*o = append((*o)[:0], bytes.TrimSpace(data)...)
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("api client: %s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// responseError decodes an error body, or wraps a foreign one.
func responseError(status int, data []byte) *Error {
	e := &Error{}
	if err := json.Unmarshal(data, e); err != nil || e.Code == "" {
		msg := strings.TrimSpace(string(data))
		if len(msg) > 200 {
			msg = msg[:200]
		}
		e = &Error{Code: "", Message: strings.TrimSpace(http.StatusText(status) + " " + msg)}
	}
	e.Status = status
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	return e
}

// IsCode reports whether err is an *Error with code.
func IsCode(err error, code Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// Ping checks that a daemon answers GET /healthz within DefaultPingTimeout.
func (c *Client) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, DefaultPingTimeout)
	defer cancel()
	return c.do(ctx, http.MethodGet, "/healthz", nil, nil, nil)
}

// Status returns GET /api/v1/status verbatim.
func (c *Client) Status(ctx context.Context) (json.RawMessage, error) {
	var out json.RawMessage
	return out, c.do(ctx, http.MethodGet, "/api/v1/status", nil, nil, &out)
}

// Reload asks the daemon to reload its configuration.
func (c *Client) Reload(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/-/reload", nil, nil, nil)
}

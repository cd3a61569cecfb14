package proxmox

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/patrold/patrold/snapshot"
)

// Errors a request can match with errors.Is.
var (
	// ErrUnauthorized: the API refused the token (HTTP 401).
	ErrUnauthorized = errors.New("authentication failed")
	// ErrNodeUnreachable: the node the request was proxied to did not
	// answer (HTTP 595/596 from pveproxy, or a timeout or transport error).
	ErrNodeUnreachable = errors.New("node unreachable")
)

// APIError is a non-2xx answer of the API.
type APIError struct {
	Endpoint string // "GET /nodes/pve1/disks/list"
	Status   int
	Message  string // PVE's reason phrase or body message
}

func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return fmt.Sprintf("%s: HTTP %d %s", e.Endpoint, e.Status, msg)
}

// Is matches ErrNodeUnreachable for pveproxy's proxy failures.
func (e *APIError) Is(target error) bool {
	return target == ErrNodeUnreachable && (e.Status == 595 || e.Status == 596)
}

type client struct {
	base    *url.URL
	http    *http.Client
	key     string // the YAML section errors name: "source.proxmox"
	scheme  string // the token scheme: "PVEAPIToken" or "PBSAPIToken"
	tokenID string
	file    string
	timeout time.Duration
	metrics *metrics
	pace    *pacer // nil: not paced
}

// endpoint is what a client is built from: the API of a PVE cluster or a
// PBS server, which differ in the token header only.
type endpoint struct {
	key, scheme        string
	url, tokenID, file string
	timeout            time.Duration
	concurrency        int // requests in flight at most: the connections kept
	tls                TLSOptions
	rate               float64 // requests a second a node is sent; 0: not paced
}

// The token schemes of the Authorization header: PVE joins id and secret
// with "=", PBS with ":".
const (
	pveScheme = "PVEAPIToken"
	pbsScheme = "PBSAPIToken"
)

func newClient(e endpoint) (*client, error) {
	if _, err := readSecret(e.file); err != nil {
		return nil, fmt.Errorf("%s.token_secret_file: %w", e.key, err)
	}
	tc, err := tlsConfig(e.tls, e.key)
	if err != nil {
		return nil, err
	}
	base, err := url.Parse(strings.TrimRight(e.url, "/"))
	if err != nil {
		return nil, fmt.Errorf("%s.url: %w", e.key, err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	// Every request goes to the one host of the URL: as many idle
	// connections as requests in flight keeps them all alive, and a
	// request waits for one rather than opening another.
	tr.MaxIdleConnsPerHost = e.concurrency
	//mutate:pace-connections-bounded ./snapshot/proxmox ^TestPace(KeepsConnectionsAlive|ClientBoundsConnections)$
	tr.MaxConnsPerHost = e.concurrency
	return &client{base: base.JoinPath("api2", "json"), http: &http.Client{Transport: tr,
		// The API never redirects; following one could send the token elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		key: e.key, scheme: e.scheme, tokenID: e.tokenID, file: e.file, timeout: e.timeout, pace: newPacer(e.rate)}, nil
}

// session is one collection's view of the client: the secret read once.
type session struct {
	c      *client
	header string
}

func (c *client) session() (*session, error) {
	secret, err := readSecret(c.file)
	if err != nil {
		return nil, fmt.Errorf("%s.token_secret_file: %w", c.key, err)
	}
	sep := "="
	if c.scheme == pbsScheme {
		sep = ":"
	}
	return &session{c: c, header: c.scheme + "=" + c.tokenID + sep + secret}, nil
}

// get fetches one endpoint (path segments under /api2/json) and decodes
// its "data" member with decode.
func (s *session) get(ctx context.Context, segments []string, query url.Values, decode func([]byte) error) error {
	//mutate:pace-node-rate ./snapshot/proxmox ^TestPaceNodeRate$
	if s.c.pace != nil {
		if err := s.c.pace.wait(ctx, segments); err != nil {
			return fmt.Errorf("%s: %w: waiting for its turn (source.proxmox.rate): %v", endpointOf(segments), ErrNodeUnreachable, err)
		}
	}
	snapshot.CountRequest(ctx)
	start := time.Now()
	err := s.fetch(ctx, segments, query, decode)
	s.c.metrics.observe(segments, time.Since(start).Seconds(), err)
	return err
}

func (s *session) fetch(ctx context.Context, segments []string, query url.Values, decode func([]byte) error) error {
	u := s.c.base.JoinPath(escapeAll(segments)...)
	u.RawQuery = query.Encode()
	endpoint := endpointOf(segments)
	ctx, cancel := context.WithTimeout(ctx, s.c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("%s: %w", endpoint, err)
	}
	req.Header.Set("Authorization", s.header)
	req.Header.Set("Accept", "application/json")
	resp, err := s.c.http.Do(req)
	var cv *tls.CertificateVerificationError
	switch {
	case errors.Is(err, ErrFingerprintMismatch):
		return fmt.Errorf("%s: tls: %w", endpoint, errors.Unwrap(err))
	case errors.As(err, &cv):
		return fmt.Errorf("%s: %w (set %s.tls.ca_file or tls.fingerprint for a self-signed server)", endpoint, cv, s.c.key)
	case err != nil:
		return fmt.Errorf("%s: %w: %v", endpoint, ErrNodeUnreachable, transportCause(err, s.c.timeout, s.c.key))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes+1))
	if err != nil {
		return fmt.Errorf("%s: %w: reading the answer: %v", endpoint, ErrNodeUnreachable, transportCause(err, s.c.timeout, s.c.key))
	}
	if len(body) > maxBodyBytes {
		return fmt.Errorf("%s: answer larger than %d bytes", endpoint, maxBodyBytes)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("%s: HTTP 401: %w for API token %q: check %s.token_id and the secret in %s.token_secret_file (%s)",
			endpoint, ErrUnauthorized, s.c.tokenID, s.c.key, s.c.key, s.c.file)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &APIError{Endpoint: endpoint, Status: resp.StatusCode, Message: apiMessage(resp, body)}
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("%s: %w", endpoint, jsonError(err, ""))
	}
	if len(env.Data) == 0 || string(env.Data) == "null" {
		return fmt.Errorf("%s: answer has no \"data\" member", endpoint)
	}
	if err := decode(env.Data); err != nil {
		return fmt.Errorf("%s: %w", endpoint, err)
	}
	return nil
}

// endpointOf names a request in errors: "GET /nodes/pve1/disks/list".
func endpointOf(segments []string) string { return "GET /" + strings.Join(escapeAll(segments), "/") }

func escapeAll(segments []string) []string {
	out := make([]string, len(segments))
	for i, s := range segments {
		out[i] = url.PathEscape(s)
	}
	return out
}

func transportCause(err error, timeout time.Duration, key string) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %s (%s.timeout)", timeout, key)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// apiMessage is PVE's error text: the body's "message", else the reason
// phrase of the status line (where pveproxy puts the first line).
func apiMessage(resp *http.Response, body []byte) string {
	var m struct {
		Message string            `json:"message"`
		Errors  map[string]string `json:"errors"`
	}
	if json.Unmarshal(body, &m) == nil {
		msg := strings.TrimSpace(m.Message)
		for k, v := range m.Errors {
			msg = strings.TrimSpace(msg + " " + k + ": " + v)
		}
		if msg != "" {
			return clip(msg)
		}
	}
	_, reason, _ := strings.Cut(resp.Status, " ")
	if reason == http.StatusText(resp.StatusCode) {
		return ""
	}
	return clip(reason)
}

func clip(s string) string {
	const limit = 300
	if len(s) > limit {
		return s[:limit] + "..."
	}
	return s
}

// jsonError names the field of a decoding error ("data[3].maxmem").
func jsonError(err error, prefix string) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if prefix != "" && field != "" {
			field = prefix + "." + field
		} else if prefix != "" {
			field = prefix
		}
		return fmt.Errorf("%s: must be %s, got %s", field, jsonKind(te.Type.String()), te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("not valid JSON at byte %d: %v", se.Offset, err)
	}
	return err
}

func jsonKind(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case strings.HasPrefix(goType, "struct"):
		return "an object" // its field types may name a number
	case goType == "string":
		return "a string"
	case strings.Contains(goType, "int") || strings.Contains(goType, "float") || strings.Contains(goType, "num"):
		return "a number"
	case goType == "bool":
		return "a boolean"
	}
	return "an object"
}

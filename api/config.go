package api

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/patrold/patrold/internal/confcheck"
)

// HTTPConfig is the http section: the API listener and its bearer
// tokens.
type HTTPConfig struct {
	Listen       string        `koanf:"listen" yaml:"listen"`
	Tokens       []TokenConfig `koanf:"tokens" yaml:"tokens"`
	MaxBodyBytes int64         `koanf:"max_body_bytes" yaml:"max_body_bytes"`
	// ReadHeaderTimeout bounds reading a request's header; ReadTimeout
	// bounds reading the whole request, body included. A client slower
	// than either has its connection closed, whatever its token.
	ReadHeaderTimeout time.Duration `koanf:"read_header_timeout" yaml:"read_header_timeout"`
	ReadTimeout       time.Duration `koanf:"read_timeout" yaml:"read_timeout"`
	// StreamAckTimeout bounds how long, in cluster mode, a mutation's
	// answer waits for the stream to store its change (DurableAnswers).
	StreamAckTimeout time.Duration `koanf:"stream_ack_timeout" yaml:"stream_ack_timeout"`
	// Pprof serves /debug/pprof/ to admin tokens (off by default).
	Pprof bool `koanf:"pprof" yaml:"pprof"`
	// PublicURL is the web pages' address as a browser reaches it (behind
	// a proxy, say); alert links and event datarefs are built on it.
	// "": http://<listen>, with the host's name for a wildcard host.
	PublicURL string `koanf:"public_url" yaml:"public_url"`
}

// FindingPagePath is the web page of one finding under the public URL.
const FindingPagePath = "/ui/findings/"

// BaseURL is the public URL without a trailing slash: PublicURL when set,
// else derived from Listen (a wildcard or empty host becomes this
// machine's name).
func (c HTTPConfig) BaseURL() string {
	if c.PublicURL != "" {
		return strings.TrimRight(c.PublicURL, "/")
	}
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return "http://" + c.Listen
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		if h, err := os.Hostname(); err == nil && h != "" {
			host = h
		} else {
			host = "localhost"
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}

// FindingURL is the web page of finding id.
func (c HTTPConfig) FindingURL(id string) string {
	return c.BaseURL() + FindingPagePath + url.PathEscape(id)
}

// TokenConfig is one API bearer token, given inline or (better) in a file.
type TokenConfig struct {
	Name      string `koanf:"name" yaml:"name"`
	Token     Secret `koanf:"token" yaml:"token,omitempty"`
	TokenFile string `koanf:"token_file" yaml:"token_file,omitempty"`
	Scope     string `koanf:"scope" yaml:"scope"` // read | admin
}

// Spec is the token's declaration, its value revealed.
func (t TokenConfig) Spec() TokenSpec {
	return TokenSpec{Name: t.Name, Token: t.Token.Reveal(), TokenFile: t.TokenFile, Scope: t.Scope}
}

// DefaultHTTPConfig is the http section's defaults.
func DefaultHTTPConfig() HTTPConfig {
	return HTTPConfig{Listen: "127.0.0.1:9477", MaxBodyBytes: 1 << 20,
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, StreamAckTimeout: DefaultStreamAckTimeout}
}

// Validate reports every problem, each naming its key under http.
func (c HTTPConfig) Validate() error {
	var p confcheck.Problems
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		p.Addf("http.listen", "%q is not host:port", c.Listen)
	}
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		switch {
		case err != nil:
			p.Addf("http.public_url", "%q is not a URL", c.PublicURL)
		case u.Scheme != "http" && u.Scheme != "https":
			p.Addf("http.public_url", "scheme %q must be http or https", u.Scheme)
		case u.Host == "":
			p.Add("http.public_url", "host is missing")
		case u.User != nil || u.RawQuery != "" || u.Fragment != "":
			p.Add("http.public_url", "must carry no credentials, query or fragment")
		}
	}
	if c.MaxBodyBytes <= 0 {
		p.Add("http.max_body_bytes", "must be positive")
	}
	if c.ReadHeaderTimeout <= 0 {
		p.Add("http.read_header_timeout", "must be positive")
	}
	if c.ReadTimeout < c.ReadHeaderTimeout {
		p.Addf("http.read_timeout", "must be at least http.read_header_timeout (%s), got %s", c.ReadHeaderTimeout, c.ReadTimeout)
	}
	if c.StreamAckTimeout <= 0 || c.StreamAckTimeout > MaxStreamAckTimeout {
		p.Addf("http.stream_ack_timeout", "must be above 0 and at most %s (a standby waits this long and 1s more for a forwarded answer), got %s", MaxStreamAckTimeout, c.StreamAckTimeout)
	}
	if c.Pprof {
		admin := false
		for _, t := range c.Tokens {
			admin = admin || t.Scope == "admin"
		}
		if !admin {
			p.Add("http.pprof", "needs an admin token in http.tokens (the profiles are served to admin tokens only)")
		}
	}
	names := map[string]bool{}
	for i, t := range c.Tokens {
		key := fmt.Sprintf("http.tokens[%d]", i)
		if t.Name == "" {
			p.Add(key+".name", "required")
		} else if names[t.Name] {
			p.Addf(key+".name", "duplicate token name %q", t.Name)
		}
		names[t.Name] = true
		if (t.Token == "") == (t.TokenFile == "") {
			p.Add(key, "set exactly one of token and token_file")
		} else if why := shortSecret(t.Token.Reveal()); t.Token != "" && why != "" {
			p.Add(key+".token", why)
		}
		p.OneOf(key+".scope", t.Scope, "read", "admin", "trigger")
	}
	return p.Error()
}

// Secret is a string that never prints: String, YAML and JSON render it as
// "<hidden>" (or "" when empty).
type Secret string

const hidden = "<hidden>"

func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return hidden
}

// Reveal returns the secret value; call it only where the value is used.
func (s Secret) Reveal() string { return string(s) }

// MarshalYAML hides the value.
func (s Secret) MarshalYAML() (any, error) { return s.String(), nil }

// MarshalText hides the value (JSON and text encoders).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

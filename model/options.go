package model

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"
)

// Provider names accepted by model.provider.
const (
	ProviderNone      = "none"
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
	ProviderScript    = "script"
)

// Defaults for the model section. Every key has one; an empty section means
// "no model" and the daemon runs deterministic-only.
const (
	DefaultProvider               = ProviderNone
	DefaultMaxSkipAge             = 24 * time.Hour
	DefaultOpenAIBaseURL          = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL       = "https://api.anthropic.com"
	DefaultTimeout                = 120 * time.Second
	DefaultMaxRetries             = 2
	DefaultOpenAIContextWindow    = 128000
	DefaultAnthropicContextWindow = 200000
	DefaultMaxOutputTokens        = 4096
	// MinContextTokens is the smallest context_tokens accepted: below it
	// the policy, the tools and a useful seed do not fit.
	MinContextTokens  = 8192
	maxRetriesLimit   = 10
	maxKeyFileBytes   = 4096
	providerKeyPrefix = "model."
)

// Options is the `model:` section of the configuration.
type Options struct {
	// Provider is none, openai, anthropic or script.
	Provider string `koanf:"provider" json:"provider" yaml:"provider"`
	// MaxSkipAge is how long model stages may be skipped for budget reasons
	// before the skip is reported as a problem of its own.
	MaxSkipAge time.Duration `koanf:"max_skip_age" json:"max_skip_age" yaml:"max_skip_age"`
	// ContextTokens is the context window every request is kept within;
	// 0 takes the selected endpoint's context_window.
	ContextTokens int `koanf:"context_tokens" json:"context_tokens" yaml:"context_tokens"`
	// MaskNames sends resource names, ids, tags and addresses to the model
	// as stable placeholders and maps them back in its answers.
	MaskNames bool            `koanf:"mask_names" json:"mask_names" yaml:"mask_names"`
	OpenAI    EndpointOptions `koanf:"openai" json:"openai" yaml:"openai"`
	Anthropic EndpointOptions `koanf:"anthropic" json:"anthropic" yaml:"anthropic"`
	Script    ScriptOptions   `koanf:"script" json:"script" yaml:"script"`
	Prices    Prices          `koanf:"prices" json:"prices" yaml:"prices"`
	Budget    BudgetOptions   `koanf:"budget" json:"budget" yaml:"budget"`
}

// EndpointOptions configure one HTTP model API. The API key itself is never
// part of the options: only where to read it from.
type EndpointOptions struct {
	BaseURL         string        `koanf:"base_url" json:"base_url" yaml:"base_url"`
	Model           string        `koanf:"model" json:"model" yaml:"model"`
	APIKeyFile      string        `koanf:"api_key_file" json:"api_key_file" yaml:"api_key_file"`
	APIKeyEnv       string        `koanf:"api_key_env" json:"api_key_env" yaml:"api_key_env"`
	Timeout         time.Duration `koanf:"timeout" json:"timeout" yaml:"timeout"`
	MaxRetries      int           `koanf:"max_retries" json:"max_retries" yaml:"max_retries"`
	ContextWindow   int           `koanf:"context_window" json:"context_window" yaml:"context_window"`
	MaxOutputTokens int           `koanf:"max_output_tokens" json:"max_output_tokens" yaml:"max_output_tokens"`
	// Stream asks for the answer as server-sent events and assembles it
	// before anything reads it, so a tool call split across chunks is
	// whole again before the leak check sees the text.
	Stream bool `koanf:"stream" json:"stream" yaml:"stream"`
}

// ScriptOptions configure the scripted provider.
type ScriptOptions struct {
	Path string `koanf:"path" json:"path" yaml:"path"`
}

// DefaultOptions returns the model section with every default filled in.
func DefaultOptions() Options {
	return Options{
		Provider:   DefaultProvider,
		MaxSkipAge: DefaultMaxSkipAge,
		OpenAI:     DefaultEndpoint(ProviderOpenAI),
		Anthropic:  DefaultEndpoint(ProviderAnthropic),
	}
}

// DefaultEndpoint returns the defaults of the openai or anthropic section.
func DefaultEndpoint(provider string) EndpointOptions {
	e := EndpointOptions{
		BaseURL:         DefaultOpenAIBaseURL,
		Timeout:         DefaultTimeout,
		MaxRetries:      DefaultMaxRetries,
		ContextWindow:   DefaultOpenAIContextWindow,
		MaxOutputTokens: DefaultMaxOutputTokens,
	}
	if provider == ProviderAnthropic {
		e.BaseURL = DefaultAnthropicBaseURL
		e.ContextWindow = DefaultAnthropicContextWindow
	}
	return e
}

// Validate checks the section and returns every problem, each naming its
// key under "model.".
func (o Options) Validate() error {
	var errs []string
	add := func(key, format string, args ...any) {
		errs = append(errs, providerKeyPrefix+key+": "+fmt.Sprintf(format, args...))
	}
	switch o.Provider {
	case ProviderNone, ProviderOpenAI, ProviderAnthropic:
	case ProviderScript:
		if strings.TrimSpace(o.Script.Path) == "" {
			add("script.path", "required when model.provider is script")
		}
	default:
		add("provider", "%q is not one of none, openai, anthropic, script", o.Provider)
	}
	if o.MaxSkipAge < 0 {
		add("max_skip_age", "%s must not be negative", o.MaxSkipAge)
	}
	if o.ContextTokens < 0 {
		add("context_tokens", "%d must not be negative (0: the endpoint's context_window)", o.ContextTokens)
	} else if o.ContextTokens > 0 && o.ContextTokens < MinContextTokens {
		add("context_tokens", "%d is below the minimum %d", o.ContextTokens, MinContextTokens)
	} else if ep, ok := o.Endpoint(); ok && o.ContextTokens > 0 && ep.MaxOutputTokens >= o.ContextTokens/2 {
		add("context_tokens", "%d must be more than twice max_output_tokens %d", o.ContextTokens, ep.MaxOutputTokens)
	}
	errs = append(errs, o.OpenAI.validate(ProviderOpenAI, o.Provider == ProviderOpenAI)...)
	errs = append(errs, o.Anthropic.validate(ProviderAnthropic, o.Provider == ProviderAnthropic)...)
	errs = append(errs, o.Budget.validate()...)
	names := make([]string, 0, len(o.Prices))
	for name := range o.Prices {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		errs = append(errs, o.Prices[name].validate(name)...)
	}
	if o.Budget.Limited() {
		if ep, ok := o.Endpoint(); ok {
			if _, priced := o.Prices.Lookup(ep.Model); !priced && ep.Model != "" {
				add("prices", "no price for model %q, but model.budget sets a limit", ep.Model)
			}
		}
	}
	if len(errs) > 0 {
		return &ValidationError{Problems: errs}
	}
	return nil
}

// Endpoint returns the endpoint section of the selected provider, if it
// has one, with context_tokens (when set) as its context window.
func (o Options) Endpoint() (EndpointOptions, bool) {
	var ep EndpointOptions
	switch o.Provider {
	case ProviderOpenAI:
		ep = o.OpenAI
	case ProviderAnthropic:
		ep = o.Anthropic
	default:
		return EndpointOptions{}, false
	}
	if o.ContextTokens > 0 {
		ep.ContextWindow = o.ContextTokens
	}
	return ep, true
}

// Window is the context window of the configured model: context_tokens
// when set, else the selected endpoint's context_window; 0 when neither
// (the script provider without context_tokens).
func (o Options) Window() int {
	ep, _ := o.Endpoint()
	if o.ContextTokens > 0 {
		return o.ContextTokens
	}
	return ep.ContextWindow
}

func (e EndpointOptions) validate(section string, selected bool) []string {
	var errs []string
	key := func(k string) string { return providerKeyPrefix + section + "." + k }
	if e.BaseURL != "" {
		u, err := url.Parse(e.BaseURL)
		switch {
		case err != nil:
			errs = append(errs, key("base_url")+": not a URL")
		case u.Scheme != "http" && u.Scheme != "https":
			errs = append(errs, key("base_url")+fmt.Sprintf(": scheme %q must be http or https", u.Scheme))
		case u.Host == "":
			errs = append(errs, key("base_url")+": host is missing")
		case u.User != nil:
			errs = append(errs, key("base_url")+": must not carry credentials; use api_key_file or api_key_env")
		}
	} else if selected {
		errs = append(errs, key("base_url")+": required")
	}
	if selected && strings.TrimSpace(e.Model) == "" {
		errs = append(errs, key("model")+": required when model.provider is "+section)
	}
	if e.APIKeyFile != "" && e.APIKeyEnv != "" {
		errs = append(errs, key("api_key_file")+": set either api_key_file or api_key_env, not both")
	}
	if e.Timeout < 0 {
		errs = append(errs, key("timeout")+fmt.Sprintf(": %s must not be negative", e.Timeout))
	}
	if e.MaxRetries < 0 || e.MaxRetries > maxRetriesLimit {
		errs = append(errs, key("max_retries")+fmt.Sprintf(": %d is outside 0..%d", e.MaxRetries, maxRetriesLimit))
	}
	if e.ContextWindow < 0 {
		errs = append(errs, key("context_window")+fmt.Sprintf(": %d must not be negative", e.ContextWindow))
	}
	if e.MaxOutputTokens < 0 {
		errs = append(errs, key("max_output_tokens")+fmt.Sprintf(": %d must not be negative", e.MaxOutputTokens))
	}
	if e.ContextWindow > 0 && e.MaxOutputTokens >= e.ContextWindow {
		errs = append(errs, key("max_output_tokens")+fmt.Sprintf(": %d must be below context_window %d", e.MaxOutputTokens, e.ContextWindow))
	}
	return errs
}

// LoadAPIKey reads the API key from api_key_file or api_key_env. It returns
// "" when neither is set (local OpenAI-compatible servers need no key). The
// key is returned to the caller only; it is never kept in Options and never
// appears in an error.
func (e EndpointOptions) LoadAPIKey(section string) (string, error) {
	key := providerKeyPrefix + section + "."
	switch {
	case e.APIKeyFile != "":
		f, err := os.Open(e.APIKeyFile)
		if err != nil {
			return "", fmt.Errorf("%sapi_key_file: cannot read %s: %w", key, e.APIKeyFile, pathError(err))
		}
		defer f.Close()
		buf := make([]byte, maxKeyFileBytes+1)
		n, _ := f.Read(buf)
		if n > maxKeyFileBytes {
			return "", fmt.Errorf("%sapi_key_file: %s is larger than %d bytes", key, e.APIKeyFile, maxKeyFileBytes)
		}
		k := strings.TrimSpace(string(buf[:n]))
		if k == "" {
			return "", fmt.Errorf("%sapi_key_file: %s is empty", key, e.APIKeyFile)
		}
		return k, nil
	case e.APIKeyEnv != "":
		k := strings.TrimSpace(os.Getenv(e.APIKeyEnv))
		if k == "" {
			return "", fmt.Errorf("%sapi_key_env: environment variable %s is empty or unset", key, e.APIKeyEnv)
		}
		return k, nil
	}
	return "", nil
}

// pathError drops the path (already named) and keeps the cause.
func pathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ValidationError lists every problem found in the model section.
type ValidationError struct{ Problems []string }

func (e *ValidationError) Error() string { return strings.Join(e.Problems, "; ") }

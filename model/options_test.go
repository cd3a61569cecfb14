package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func validOpenAI() Options {
	o := DefaultOptions()
	o.Provider = ProviderOpenAI
	o.OpenAI.Model = "gpt-test"
	o.OpenAI.APIKeyEnv = "PATROLD_TEST_KEY"
	return o
}

func TestDefaultOptionsAreValid(t *testing.T) {
	o := DefaultOptions()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.Provider != ProviderNone || o.MaxSkipAge != 24*time.Hour {
		t.Fatalf("defaults = %+v", o)
	}
	if err := validOpenAI().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidateNamesTheKey(t *testing.T) {
	cases := []struct {
		name string
		mut  func(*Options)
		want string
	}{
		{"provider", func(o *Options) { o.Provider = "gemini" }, `model.provider: "gemini" is not one of none, openai, anthropic, script`},
		{"skip age", func(o *Options) { o.MaxSkipAge = -time.Second }, "model.max_skip_age: -1s must not be negative"},
		{"model missing", func(o *Options) { o.OpenAI.Model = "" }, "model.openai.model: required when model.provider is openai"},
		{"base url scheme", func(o *Options) { o.OpenAI.BaseURL = "ftp://x" }, `model.openai.base_url: scheme "ftp" must be http or https`},
		{"base url creds", func(o *Options) { o.OpenAI.BaseURL = "https://u:p@x" }, "model.openai.base_url: must not carry credentials"},
		{"base url empty", func(o *Options) { o.OpenAI.BaseURL = "" }, "model.openai.base_url: required"},
		{"two key sources", func(o *Options) { o.OpenAI.APIKeyFile = "/k" }, "model.openai.api_key_file: set either api_key_file or api_key_env, not both"},
		{"timeout", func(o *Options) { o.Anthropic.Timeout = -1 }, "model.anthropic.timeout: -1ns must not be negative"},
		{"retries", func(o *Options) { o.OpenAI.MaxRetries = 11 }, "model.openai.max_retries: 11 is outside 0..10"},
		{"window", func(o *Options) { o.OpenAI.ContextWindow = -5 }, "model.openai.context_window: -5 must not be negative"},
		{"output vs window", func(o *Options) { o.OpenAI.MaxOutputTokens = 200000 }, "model.openai.max_output_tokens: 200000 must be below context_window 128000"},
		{"context tokens negative", func(o *Options) { o.ContextTokens = -1 }, "model.context_tokens: -1 must not be negative (0: the endpoint's context_window)"},
		{"context tokens small", func(o *Options) { o.ContextTokens = 4096 }, "model.context_tokens: 4096 is below the minimum 8192"},
		{"context tokens vs output", func(o *Options) { o.ContextTokens = 8192; o.OpenAI.MaxOutputTokens = 4096 }, "model.context_tokens: 8192 must be more than twice max_output_tokens 4096"},
		{"script path", func(o *Options) { o.Provider = ProviderScript }, "model.script.path: required when model.provider is script"},
		{"budget", func(o *Options) { o.Budget.PerDayUSD = -1 }, "model.budget.per_day_usd: -1 must be a non-negative number"},
		{"price", func(o *Options) { o.Prices = Prices{"gpt-test": {InputPerMTok: -2}} }, "model.prices.gpt-test.input_per_mtok: -2 must be a non-negative number"},
		{"budget without price", func(o *Options) { o.Budget.PerRunUSD = 1 }, `model.prices: no price for model "gpt-test", but model.budget sets a limit`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := validOpenAI()
			tc.mut(&o)
			err := o.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant %q", err, tc.want)
			}
		})
	}
}

func TestContextTokensIsTheEndpointsWindow(t *testing.T) {
	o := validOpenAI()
	ep, ok := o.Endpoint()
	if !ok || ep != o.OpenAI {
		t.Fatalf("without context_tokens: %+v, %v; want the openai section %+v", ep, ok, o.OpenAI)
	}
	o.ContextTokens = 16384
	want := o.OpenAI
	want.ContextWindow = 16384
	if ep, _ := o.Endpoint(); ep != want {
		t.Fatalf("with context_tokens: %+v\nwant %+v", ep, want)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if w := o.Window(); w != 16384 {
		t.Fatalf("window %d, want context_tokens 16384", w)
	}
	o.Provider = ProviderScript
	o.Script.Path = "s.yaml"
	if ep, ok := o.Endpoint(); ok || ep != (EndpointOptions{}) {
		t.Fatalf("script provider: %+v, %v; want no endpoint", ep, ok)
	}
	if w := o.Window(); w != 16384 {
		t.Fatalf("script provider: window %d, want context_tokens 16384", w)
	}
	o.ContextTokens = 0
	if w := o.Window(); w != 0 {
		t.Fatalf("script provider without context_tokens: window %d, want 0", w)
	}
}

const secretKey = "sk-live-SECRET-abcdef0123456789"

func TestLoadAPIKeyNeverPrintsTheKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "key")
	if err := os.WriteFile(path, []byte(secretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := EndpointOptions{APIKeyFile: path}
	k, err := e.LoadAPIKey("openai")
	if err != nil || k != secretKey {
		t.Fatalf("key = %q, %v", k, err)
	}
	t.Setenv("PATROLD_TEST_KEY", secretKey)
	if k, err := (EndpointOptions{APIKeyEnv: "PATROLD_TEST_KEY"}).LoadAPIKey("anthropic"); err != nil || k != secretKey {
		t.Fatalf("env key = %q, %v", k, err)
	}
	_, err = (EndpointOptions{APIKeyEnv: "PATROLD_TEST_UNSET_KEY"}).LoadAPIKey("anthropic")
	if err == nil || !strings.Contains(err.Error(), "model.anthropic.api_key_env: environment variable PATROLD_TEST_UNSET_KEY is empty or unset") {
		t.Fatalf("err = %v", err)
	}
	_, err = (EndpointOptions{APIKeyFile: filepath.Join(dir, "missing")}).LoadAPIKey("openai")
	if err == nil || !strings.HasPrefix(err.Error(), "model.openai.api_key_file: cannot read") {
		t.Fatalf("err = %v", err)
	}
	// Options hold only where the key is; printing them shows no key.
	o := validOpenAI()
	o.OpenAI.APIKeyFile, o.OpenAI.APIKeyEnv = path, ""
	js, _ := json.Marshal(o)
	for _, s := range []string{fmt.Sprintf("%v", o), fmt.Sprintf("%+v", o), string(js)} {
		if strings.Contains(s, secretKey) {
			t.Fatalf("options print the key: %s", s)
		}
	}
}

func TestSecretNeverFormats(t *testing.T) {
	s := Secret(secretKey)
	js, _ := json.Marshal(struct{ K Secret }{s})
	text, _ := s.MarshalText()
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s %q %x", s, s, s, s, s, s), string(js), string(text)} {
		if strings.Contains(out, "SECRET") {
			t.Fatalf("secret leaked: %s", out)
		}
	}
	if s.Reveal() != secretKey {
		t.Fatal("Reveal lost the key")
	}
}

func TestRedactAndErrors(t *testing.T) {
	msg := Redact("bad key "+secretKey+"\nline2\x00", secretKey)
	if strings.Contains(msg, "SECRET") || strings.ContainsAny(msg, "\n\x00") {
		t.Fatalf("redacted = %q", msg)
	}
	if len(Redact(strings.Repeat("é", 1000))) > maxErrorMessage+3 {
		t.Fatal("long message not bounded")
	}
	e := NewError("openai", ErrorCanceled, 0, "request canceled", context.Canceled)
	if !errors.Is(e, context.Canceled) || e.Error() != "model openai: canceled: request canceled: context canceled" {
		t.Fatalf("err = %v", e)
	}
	for status, kind := range map[int]ErrorKind{401: ErrorAuth, 403: ErrorAuth, 429: ErrorTransient, 408: ErrorTransient,
		500: ErrorTransient, 529: ErrorTransient, 400: ErrorBadRequest, 404: ErrorBadRequest, 422: ErrorBadRequest} {
		if KindForStatus(status) != kind {
			t.Errorf("status %d -> %s, want %s", status, KindForStatus(status), kind)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	if ClassifyTransport(ctx, context.DeadlineExceeded) != ErrorTransient {
		t.Fatal("a per-attempt timeout is transient")
	}
	cancel()
	if ClassifyTransport(ctx, context.Canceled) != ErrorCanceled {
		t.Fatal("caller cancellation is canceled")
	}
}

func TestNormalizeArguments(t *testing.T) {
	for in, want := range map[string]string{"": `{}`, "  ": `{}`, `{"a": 1}`: `{"a":1}`, `{bad`: `"{bad"`, `[1]`: `[1]`} {
		if got := string(NormalizeArguments([]byte(in))); got != want {
			t.Errorf("NormalizeArguments(%q) = %s, want %s", in, got, want)
		}
	}
}

package providers

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/patrold/patrold/model"
)

const key = "sk-factory-SECRET-42424242"

func TestNoneReturnsNil(t *testing.T) {
	for _, o := range []model.Options{{}, model.DefaultOptions()} {
		p, err := New(o, prometheus.NewRegistry())
		if p != nil || err != nil {
			t.Fatalf("provider none = %v, %v", p, err)
		}
	}
}

func TestInvalidOptionsNameTheKey(t *testing.T) {
	o := model.DefaultOptions()
	o.Provider = model.ProviderAnthropic
	if _, err := New(o, nil); err == nil || !strings.Contains(err.Error(), "model.anthropic.model: required") {
		t.Fatalf("err = %v", err)
	}
	o = model.DefaultOptions()
	o.Provider, o.OpenAI.Model, o.OpenAI.APIKeyEnv = model.ProviderOpenAI, "gpt-test", "PATROLD_TEST_NO_SUCH_KEY"
	if _, err := New(o, nil); err == nil || !strings.Contains(err.Error(), "model.openai.api_key_env") {
		t.Fatalf("err = %v", err)
	}
}

func openAIServer(t *testing.T, status int, body string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":{"message":"wrong key"}}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func openAIOptions(t *testing.T, url string) model.Options {
	t.Helper()
	path := filepath.Join(t.TempDir(), "openai.key")
	if err := os.WriteFile(path, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	o := model.DefaultOptions()
	o.Provider = model.ProviderOpenAI
	o.OpenAI.BaseURL, o.OpenAI.Model, o.OpenAI.APIKeyFile, o.OpenAI.MaxRetries = url+"/v1", "gpt-test", path, 0
	return o
}

func TestOpenAIWithKeyFileAndMetrics(t *testing.T) {
	srv, _ := openAIServer(t, 200, `{"model":"gpt-test","choices":[{"finish_reason":"stop","message":{"role":"assistant","content":"hi"}}],
		"usage":{"prompt_tokens":11,"completion_tokens":3}}`)
	reg := prometheus.NewRegistry()
	p, err := New(openAIOptions(t, srv.URL), reg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Chat(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "x"}}})
	if err != nil || resp.Text != "hi" || p.Name() != "openai" {
		t.Fatalf("resp = %+v, %v", resp, err)
	}
	want := `
# HELP patrold_model_tokens_total Tokens reported by the provider, by direction.
# TYPE patrold_model_tokens_total counter
patrold_model_tokens_total{direction="input",provider="openai"} 11
patrold_model_tokens_total{direction="output",provider="openai"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "patrold_model_tokens_total"); err != nil {
		t.Fatal(err)
	}
	if got := outcomeCount(t, reg, "ok"); got != 1 {
		t.Fatalf("ok = %v", got)
	}
	// The model is built once per process (model.* takes a restart): a
	// second provider on the same registry is refused, not silently merged.
	if _, err := New(openAIOptions(t, srv.URL), reg); err == nil || err.Error() != "register metrics: duplicate metrics collector registration attempted" {
		t.Fatalf("second New on the same registry: %v", err)
	}
}

// outcomeCount reads patrold_model_requests_total{outcome} from reg.
func outcomeCount(t *testing.T, reg *prometheus.Registry, outcome string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "patrold_model_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no series for outcome %s", outcome)
	return 0
}

func TestBreakerWrapsTheProvider(t *testing.T) {
	srv, hits := openAIServer(t, 500, `{"error":{"message":"down"}}`)
	reg := prometheus.NewRegistry()
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	p, err := NewWith(openAIOptions(t, srv.URL), reg, Options{Breaker: model.BreakerOptions{Now: func() time.Time { return now }}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := p.Chat(context.Background(), model.Request{}); model.KindOf(err) != model.ErrorTransient {
			t.Fatalf("err = %v", err)
		}
	}
	if _, err := p.Chat(context.Background(), model.Request{}); !errors.Is(err, model.ErrCircuitOpen) {
		t.Fatalf("4th call did not fail fast: %v", err)
	}
	if hits.Load() != 3 {
		t.Fatalf("server hit %d times", hits.Load())
	}
	want := `
# HELP patrold_model_circuit_state Circuit breaker state: 0 closed, 1 half open, 2 open.
# TYPE patrold_model_circuit_state gauge
patrold_model_circuit_state{provider="openai"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "patrold_model_circuit_state"); err != nil {
		t.Fatal(err)
	}
	if outcomeCount(t, reg, "transient") != 3 || outcomeCount(t, reg, "circuit_open") != 1 {
		t.Fatal("outcome counters wrong")
	}
}

func TestAnthropicWithEnvKey(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != key {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"type":"message","model":"claude-test","content":[{"type":"text","text":"hello"}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":1}}`)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("PATROLD_TEST_ANTHROPIC_KEY", key)
	o := model.DefaultOptions()
	o.Provider = model.ProviderAnthropic
	o.Anthropic.BaseURL, o.Anthropic.Model, o.Anthropic.APIKeyEnv = srv.URL, "claude-test", "PATROLD_TEST_ANTHROPIC_KEY"
	p, err := New(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Chat(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "x"}}})
	if err != nil || resp.Text != "hello" || p.Name() != "anthropic" {
		t.Fatalf("resp = %+v, %v", resp, err)
	}
}

func TestScriptProvider(t *testing.T) {
	o := model.DefaultOptions()
	o.Provider, o.Script.Path = model.ProviderScript, filepath.Join("..", "script", "testdata", "contract.yaml")
	p, err := New(o, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Chat(context.Background(), model.Request{})
	if err != nil || resp.ToolCalls[0].Name != "get_resource" || p.Name() != "script" {
		t.Fatalf("resp = %+v, %v", resp, err)
	}
	o.Script.Path = filepath.Join(t.TempDir(), "nope.yaml")
	if _, err := New(o, nil); err == nil || !strings.HasPrefix(err.Error(), "model.script.path") {
		t.Fatalf("err = %v", err)
	}
}

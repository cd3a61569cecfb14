package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/patrold/patrold/model"
)

const testKey = "sk-test-SECRET-0123456789abcdef"

// fakeServer speaks the /v1/chat/completions wire format. Each request is
// answered by the next handler in turn (the last one repeats).
type fakeServer struct {
	*httptest.Server
	hits   atomic.Int32
	bodies chan map[string]any
}

func newFakeServer(t *testing.T, handlers ...http.HandlerFunc) *fakeServer {
	t.Helper()
	f := &fakeServer{bodies: make(chan map[string]any, 16)}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(f.hits.Add(1)) - 1
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			http.Error(w, "wrong endpoint "+r.URL.Path, http.StatusNotFound)
			return
		}
		var body map[string]any
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &body)
		body["_auth"] = r.Header.Get("Authorization")
		select {
		case f.bodies <- body:
		default:
		}
		handlers[min(n, len(handlers)-1)](w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func jsonReply(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

const textCompletion = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test-2026",
 "choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"All quiet on pve1."}}],
 "usage":{"prompt_tokens":120,"completion_tokens":7,"total_tokens":127,"prompt_tokens_details":{"cached_tokens":64}}}`

const toolCompletion = `{"id":"chatcmpl-2","object":"chat.completion","created":1,"model":"gpt-test-2026",
 "choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,
  "tool_calls":[
   {"id":"call_a","type":"function","function":{"name":"get_resource","arguments":"{\"id\": \"vm/101\"}"}},
   {"id":"call_b","type":"function","function":{"name":"get_resource","arguments":"{\"id\":\"storage/pve1/local-zfs\"}"}},
   {"id":"call_c","type":"function","function":{"name":"list_findings","arguments":""}}]}}],
 "usage":{"prompt_tokens":300,"completion_tokens":40,"total_tokens":340}}`

func newClient(t *testing.T, baseURL string, mut func(*model.EndpointOptions)) *Client {
	t.Helper()
	e := model.DefaultEndpoint(model.ProviderOpenAI)
	e.BaseURL = baseURL + "/v1"
	e.Model = "gpt-test"
	e.MaxRetries = 0
	e.Timeout = 5 * time.Second
	if mut != nil {
		mut(&e)
	}
	c, err := New(Options{Endpoint: e, APIKey: testKey})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func simpleRequest() model.Request {
	return model.Request{System: "You are patrold.", Messages: []model.Message{{Role: model.RoleUser, Content: "Look at the fleet."}}}
}

func TestChatText(t *testing.T) {
	srv := newFakeServer(t, jsonReply(200, textCompletion))
	c := newClient(t, srv.URL, nil)
	resp, err := c.Chat(context.Background(), simpleRequest())
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if resp.Text != "All quiet on pve1." || resp.StopReason != "stop" || resp.Model != "gpt-test-2026" {
		t.Fatalf("response = %+v", resp)
	}
	if resp.Usage != (model.Usage{InputTokens: 120, OutputTokens: 7, CacheReadTokens: 64}) {
		t.Fatalf("usage = %+v", resp.Usage)
	}
	body := <-srv.bodies
	if body["_auth"] != "Bearer "+testKey || body["model"] != "gpt-test" {
		t.Fatalf("auth/model not sent: %v %v", body["_auth"], body["model"])
	}
	msgs := body["messages"].([]any)
	first := msgs[0].(map[string]any)
	if len(msgs) != 2 || first["role"] != "system" || first["content"] != "You are patrold." {
		t.Fatalf("messages = %v", msgs)
	}
	// A compatible (non-OpenAI) host gets max_tokens, which every server understands.
	if body["max_tokens"] != float64(model.DefaultMaxOutputTokens) || body["max_completion_tokens"] != nil {
		t.Fatalf("max tokens field: %v / %v", body["max_tokens"], body["max_completion_tokens"])
	}
}

func TestChatParallelToolCallsAndHistory(t *testing.T) {
	srv := newFakeServer(t, jsonReply(200, toolCompletion))
	c := newClient(t, srv.URL, nil)
	req := simpleRequest()
	req.Tools = []model.ToolDef{{Name: "get_resource", Description: "one resource",
		Parameters: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)}}
	req.Messages = append(req.Messages,
		model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "call_0", Name: "get_resource", Arguments: json.RawMessage(`{"id":"node/pve1"}`)}}},
		model.Message{Role: model.RoleTool, ToolCallID: "call_0", ToolName: "get_resource", Content: `{"cpu":91}`})
	resp, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if len(resp.ToolCalls) != 3 {
		t.Fatalf("tool calls = %+v", resp.ToolCalls)
	}
	want := []model.ToolCall{
		{ID: "call_a", Name: "get_resource", Arguments: json.RawMessage(`{"id":"vm/101"}`)},
		{ID: "call_b", Name: "get_resource", Arguments: json.RawMessage(`{"id":"storage/pve1/local-zfs"}`)},
		{ID: "call_c", Name: "list_findings", Arguments: json.RawMessage(`{}`)},
	}
	for i, w := range want {
		g := resp.ToolCalls[i]
		if g.ID != w.ID || g.Name != w.Name || string(g.Arguments) != string(w.Arguments) {
			t.Errorf("call %d = %s %s %s, want %s %s %s", i, g.ID, g.Name, g.Arguments, w.ID, w.Name, w.Arguments)
		}
	}
	if resp.Usage.InputTokens != 300 || resp.StopReason != "tool_calls" {
		t.Fatalf("usage/stop = %+v %q", resp.Usage, resp.StopReason)
	}
	body := <-srv.bodies
	msgs := body["messages"].([]any)
	asst := msgs[2].(map[string]any)
	calls := asst["tool_calls"].([]any)
	fn := calls[0].(map[string]any)["function"].(map[string]any)
	if asst["role"] != "assistant" || fn["name"] != "get_resource" || fn["arguments"] != `{"id":"node/pve1"}` {
		t.Fatalf("assistant message = %v", asst)
	}
	tool := msgs[3].(map[string]any)
	if tool["role"] != "tool" || tool["tool_call_id"] != "call_0" || tool["content"] != `{"cpu":91}` {
		t.Fatalf("tool message = %v", tool)
	}
	tools := body["tools"].([]any)
	def := tools[0].(map[string]any)["function"].(map[string]any)
	if def["name"] != "get_resource" || def["parameters"].(map[string]any)["required"].([]any)[0] != "id" {
		t.Fatalf("tool def = %v", def)
	}
}

func TestChatRetriesAfter429HonouringRetryAfter(t *testing.T) {
	srv := newFakeServer(t,
		func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "1")
			jsonReply(429, `{"error":{"message":"slow down","type":"rate_limit"}}`)(w, nil)
		},
		jsonReply(200, textCompletion))
	c := newClient(t, srv.URL, func(e *model.EndpointOptions) { e.MaxRetries = 2 })
	start := time.Now()
	resp, err := c.Chat(context.Background(), simpleRequest())
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if resp.Text == "" || srv.hits.Load() != 2 {
		t.Fatalf("hits = %d, resp = %+v", srv.hits.Load(), resp)
	}
	if elapsed < 950*time.Millisecond {
		t.Fatalf("retried after %s, want the 1s Retry-After honoured", elapsed)
	}
}

func TestChatRetries500ThenClassifiesTransient(t *testing.T) {
	srv := newFakeServer(t, jsonReply(500, `{"error":{"message":"upstream exploded"}}`))
	c := newClient(t, srv.URL, func(e *model.EndpointOptions) { e.MaxRetries = 1 })
	_, err := c.Chat(context.Background(), simpleRequest())
	var me *model.Error
	if !errors.As(err, &me) || me.Kind != model.ErrorTransient || me.Status != 500 {
		t.Fatalf("err = %v", err)
	}
	if srv.hits.Load() != 2 {
		t.Fatalf("hits = %d, want 2 (one retry)", srv.hits.Load())
	}
	if !strings.Contains(err.Error(), "upstream exploded") {
		t.Fatalf("server message lost: %v", err)
	}
}

func TestChat500ThenSuccess(t *testing.T) {
	srv := newFakeServer(t, jsonReply(503, `{"error":{"message":"busy"}}`), jsonReply(200, textCompletion))
	c := newClient(t, srv.URL, func(e *model.EndpointOptions) { e.MaxRetries = 2 })
	if _, err := c.Chat(context.Background(), simpleRequest()); err != nil || srv.hits.Load() != 2 {
		t.Fatalf("err = %v, hits = %d", err, srv.hits.Load())
	}
}

func TestChatRefusesOversizedRequestBeforeSending(t *testing.T) {
	srv := newFakeServer(t, jsonReply(200, textCompletion))
	c := newClient(t, srv.URL, func(e *model.EndpointOptions) { e.ContextWindow = 1000; e.MaxOutputTokens = 500 })
	req := simpleRequest()
	req.Messages[0].Content = strings.Repeat("x", 4000)
	_, err := c.Chat(context.Background(), req)
	if model.KindOf(err) != model.ErrorBadRequest || !strings.Contains(err.Error(), "context window 1000") {
		t.Fatalf("err = %v", err)
	}
	if srv.hits.Load() != 0 {
		t.Fatal("oversized request was sent")
	}
}

func TestChatInvalidArgumentsKeptAsString(t *testing.T) {
	srv := newFakeServer(t, jsonReply(200, `{"model":"m","choices":[{"finish_reason":"tool_calls","message":{"role":"assistant",
	 "tool_calls":[{"type":"function","function":{"name":"get_resource","arguments":"{id: vm/1"}}]}}]}`))
	c := newClient(t, srv.URL, nil)
	resp, err := c.Chat(context.Background(), simpleRequest())
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	tc := resp.ToolCalls[0]
	if tc.ID != "call_0" || string(tc.Arguments) != `"{id: vm/1"` {
		t.Fatalf("call = %+v args %s", tc, tc.Arguments)
	}
	// Usage was missing: an estimate stands in so budgets still count.
	if resp.Usage.InputTokens == 0 {
		t.Fatalf("usage not estimated: %+v", resp.Usage)
	}
}

// rewriteTransport sends every request to the test server, whatever host the
// client thinks it talks to.
type rewriteTransport struct{ target *url.URL }

func (rt rewriteTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host = rt.target.Scheme, rt.target.Host
	return http.DefaultTransport.RoundTrip(r)
}

func TestOfficialHostGetsMaxCompletionTokens(t *testing.T) {
	srv := newFakeServer(t, jsonReply(200, textCompletion))
	target, _ := url.Parse(srv.URL)
	e := model.DefaultEndpoint(model.ProviderOpenAI)
	e.Model, e.MaxRetries = "gpt-test", 0
	c, err := New(Options{Endpoint: e, APIKey: testKey, HTTPClient: &http.Client{Transport: rewriteTransport{target}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Chat(context.Background(), simpleRequest()); err != nil {
		t.Fatalf("Chat: %v", err)
	}
	body := <-srv.bodies
	if body["max_completion_tokens"] != float64(model.DefaultMaxOutputTokens) || body["max_tokens"] != nil {
		t.Fatalf("official host body: max_completion_tokens=%v max_tokens=%v", body["max_completion_tokens"], body["max_tokens"])
	}
}

func TestNewValidatesNamingKeys(t *testing.T) {
	e := model.DefaultEndpoint(model.ProviderOpenAI)
	e.BaseURL = "ftp://x"
	_, err := New(Options{Endpoint: e})
	if err == nil || !strings.Contains(err.Error(), "model.openai.base_url") || !strings.Contains(err.Error(), "model.openai.model: required") {
		t.Fatalf("err = %v", err)
	}
}

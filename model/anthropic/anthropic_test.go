package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/patrold/patrold/model"
)

const testKey = "sk-ant-test-SECRET-0123456789"

// fakeServer speaks the /v1/messages wire format. Each request is answered
// by the next handler in turn (the last one repeats).
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
		if r.URL.Path != "/v1/messages" || r.Method != http.MethodPost {
			http.Error(w, "wrong endpoint "+r.URL.Path, http.StatusNotFound)
			return
		}
		var body map[string]any
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &body)
		body["_key"] = r.Header.Get("X-Api-Key")
		body["_version"] = r.Header.Get("Anthropic-Version")
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

const textMessage = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test-2026",
 "content":[{"type":"text","text":"All quiet on pve1."}],"stop_reason":"end_turn","stop_sequence":null,
 "usage":{"input_tokens":100,"output_tokens":8,"cache_read_input_tokens":20,"cache_creation_input_tokens":0}}`

const toolMessage = `{"id":"msg_2","type":"message","role":"assistant","model":"claude-test-2026",
 "content":[
  {"type":"thinking","thinking":"hmm","signature":"x"},
  {"type":"text","text":"Checking two resources."},
  {"type":"tool_use","id":"toolu_a","name":"get_resource","input":{"id":"vm/101"}},
  {"type":"tool_use","id":"toolu_b","name":"get_resource","input":{"id":"storage/pve1/local-zfs"}}],
 "stop_reason":"tool_use","usage":{"input_tokens":300,"output_tokens":60}}`

func rateLimited(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Retry-After", "1")
	jsonReply(429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)(w, nil)
}

func newClient(t *testing.T, baseURL string, mut func(*model.EndpointOptions)) *Client {
	t.Helper()
	e := model.DefaultEndpoint(model.ProviderAnthropic)
	e.BaseURL = baseURL
	e.Model = "claude-test"
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
	srv := newFakeServer(t, jsonReply(200, textMessage))
	c := newClient(t, srv.URL, nil)
	resp, err := c.Chat(context.Background(), simpleRequest())
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if resp.Text != "All quiet on pve1." || resp.StopReason != "end_turn" || resp.Model != "claude-test-2026" {
		t.Fatalf("response = %+v", resp)
	}
	if resp.Usage != (model.Usage{InputTokens: 120, OutputTokens: 8, CacheReadTokens: 20}) {
		t.Fatalf("usage = %+v (cache reads count as input)", resp.Usage)
	}
	body := <-srv.bodies
	if body["_key"] != testKey || body["_version"] == "" || body["model"] != "claude-test" {
		t.Fatalf("headers/model: %v %v %v", body["_key"], body["_version"], body["model"])
	}
	sys := body["system"].([]any)[0].(map[string]any)
	if sys["text"] != "You are patrold." || body["max_tokens"] != float64(model.DefaultMaxOutputTokens) {
		t.Fatalf("system/max_tokens = %v %v", sys, body["max_tokens"])
	}
}

func TestChatParallelToolUseAndResults(t *testing.T) {
	srv := newFakeServer(t, jsonReply(200, toolMessage))
	c := newClient(t, srv.URL, nil)
	req := simpleRequest()
	req.Tools = []model.ToolDef{{Name: "get_resource", Description: "one resource",
		Parameters: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}`)}}
	req.Messages = append(req.Messages,
		model.Message{Role: model.RoleAssistant, Content: "Two at once.", ToolCalls: []model.ToolCall{
			{ID: "toolu_0", Name: "get_resource", Arguments: json.RawMessage(`{"id":"node/pve1"}`)},
			{ID: "toolu_1", Name: "get_resource", Arguments: json.RawMessage(`{"id":"node/pve2"}`)}}},
		model.Message{Role: model.RoleTool, ToolCallID: "toolu_0", Content: `{"cpu":91}`},
		model.Message{Role: model.RoleTool, ToolCallID: "toolu_1", Content: `{"cpu":12}`})
	resp, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if resp.Text != "Checking two resources." || len(resp.ToolCalls) != 2 || resp.StopReason != "tool_use" {
		t.Fatalf("response = %+v", resp)
	}
	if resp.ToolCalls[1].ID != "toolu_b" || string(resp.ToolCalls[1].Arguments) != `{"id":"storage/pve1/local-zfs"}` {
		t.Fatalf("second call = %+v %s", resp.ToolCalls[1], resp.ToolCalls[1].Arguments)
	}
	body := <-srv.bodies
	msgs := body["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("want user, assistant, user(tool results) = 3 messages, got %d: %v", len(msgs), msgs)
	}
	asst := msgs[1].(map[string]any)["content"].([]any)
	use := asst[1].(map[string]any)
	if use["type"] != "tool_use" || use["id"] != "toolu_0" || use["input"].(map[string]any)["id"] != "node/pve1" {
		t.Fatalf("tool_use block = %v", use)
	}
	results := msgs[2].(map[string]any)
	blocks := results["content"].([]any)
	if results["role"] != "user" || len(blocks) != 2 || blocks[1].(map[string]any)["tool_use_id"] != "toolu_1" {
		t.Fatalf("tool results = %v", results)
	}
	tool := body["tools"].([]any)[0].(map[string]any)
	schema := tool["input_schema"].(map[string]any)
	if tool["name"] != "get_resource" || schema["type"] != "object" || schema["additionalProperties"] != false || schema["required"].([]any)[0] != "id" {
		t.Fatalf("tool = %v", tool)
	}
}

func TestChatRetriesAfter429HonouringRetryAfter(t *testing.T) {
	srv := newFakeServer(t, rateLimited, jsonReply(200, textMessage))
	c := newClient(t, srv.URL, func(e *model.EndpointOptions) { e.MaxRetries = 2 })
	start := time.Now()
	if _, err := c.Chat(context.Background(), simpleRequest()); err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if elapsed := time.Since(start); elapsed < 950*time.Millisecond || srv.hits.Load() != 2 {
		t.Fatalf("elapsed %s hits %d: want one retry after the 1s Retry-After", elapsed, srv.hits.Load())
	}
}

func TestChatRetryAfterBeyondCapIsNotWaitedFor(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "3600")
		jsonReply(429, `{"type":"error","error":{"type":"rate_limit_error","message":"come back later"}}`)(w, nil)
	})
	e := model.DefaultEndpoint(model.ProviderAnthropic)
	e.BaseURL, e.Model, e.MaxRetries = srv.URL, "claude-test", 3
	c, err := New(Options{Endpoint: e, MaxRetryDelay: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = c.Chat(context.Background(), simpleRequest())
	if model.KindOf(err) != model.ErrorTransient || time.Since(start) > 2*time.Second || srv.hits.Load() != 1 {
		t.Fatalf("err = %v after %s and %d hits", err, time.Since(start), srv.hits.Load())
	}
}

func TestChatRetries500(t *testing.T) {
	srv := newFakeServer(t, jsonReply(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	c := newClient(t, srv.URL, func(e *model.EndpointOptions) { e.MaxRetries = 1 })
	_, err := c.Chat(context.Background(), simpleRequest())
	var me *model.Error
	if !errors.As(err, &me) || me.Kind != model.ErrorTransient || me.Status != 529 || srv.hits.Load() != 2 {
		t.Fatalf("err = %v, hits = %d", err, srv.hits.Load())
	}
	if !strings.Contains(err.Error(), "overloaded_error: Overloaded") {
		t.Fatalf("message lost: %v", err)
	}
	srv2 := newFakeServer(t, jsonReply(500, `{"type":"error","error":{"type":"api_error","message":"oops"}}`), jsonReply(200, textMessage))
	c2 := newClient(t, srv2.URL, func(e *model.EndpointOptions) { e.MaxRetries = 1 })
	if _, err := c2.Chat(context.Background(), simpleRequest()); err != nil || srv2.hits.Load() != 2 {
		t.Fatalf("500 then 200: err = %v hits = %d", err, srv2.hits.Load())
	}
}

func TestChatErrorKinds(t *testing.T) {
	cases := []struct {
		name   string
		h      http.HandlerFunc
		kind   model.ErrorKind
		status int
	}{
		{"malformed json", jsonReply(200, `{"id":"msg","content":[`), model.ErrorMalformed, 200},
		{"empty object", jsonReply(200, `{}`), model.ErrorMalformed, 200},
		{"unknown block", jsonReply(200, `{"type":"message","content":[{"type":"hologram"}],"stop_reason":"end_turn"}`), model.ErrorMalformed, 200},
		{"nameless tool_use", jsonReply(200, `{"type":"message","content":[{"type":"tool_use","id":"t","input":{}}],"stop_reason":"tool_use"}`), model.ErrorMalformed, 200},
		{"auth echoes key", jsonReply(401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key `+testKey+`"}}`), model.ErrorAuth, 401},
		{"bad request echoes key", jsonReply(400, `{"type":"error","error":{"type":"invalid_request_error","message":"`+testKey+` is not a model"}}`), model.ErrorBadRequest, 400},
		{"not json error", jsonReply(403, `forbidden for `+testKey), model.ErrorAuth, 403},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeServer(t, tc.h)
			c := newClient(t, srv.URL, nil)
			_, err := c.Chat(context.Background(), simpleRequest())
			var me *model.Error
			if !errors.As(err, &me) || me.Kind != tc.kind || me.Status != tc.status {
				t.Fatalf("err = %v, want kind %s status %d", err, tc.kind, tc.status)
			}
			if strings.Contains(err.Error(), testKey) || strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("error leaks the API key: %v", err)
			}
		})
	}
}

func slowHandler(w http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(3 * time.Second):
	}
}

func TestChatTimeoutIsTransient(t *testing.T) {
	srv := newFakeServer(t, slowHandler)
	c := newClient(t, srv.URL, func(e *model.EndpointOptions) { e.Timeout = 150 * time.Millisecond })
	start := time.Now()
	_, err := c.Chat(context.Background(), simpleRequest())
	if model.KindOf(err) != model.ErrorTransient || time.Since(start) > 2*time.Second {
		t.Fatalf("err = %v after %s", err, time.Since(start))
	}
}

func TestChatContextCanceled(t *testing.T) {
	srv := newFakeServer(t, slowHandler)
	c := newClient(t, srv.URL, func(e *model.EndpointOptions) { e.MaxRetries = 3 })
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := c.Chat(ctx, simpleRequest())
	if model.KindOf(err) != model.ErrorCanceled || !errors.Is(err, context.Canceled) || srv.hits.Load() != 1 {
		t.Fatalf("err = %v, hits = %d", err, srv.hits.Load())
	}
}

func TestChatConnectionRefusedIsTransient(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close()
	c := newClient(t, addr, nil)
	_, err := c.Chat(context.Background(), simpleRequest())
	if model.KindOf(err) != model.ErrorTransient {
		t.Fatalf("err = %v", err)
	}
}

func TestNewValidatesNamingKeys(t *testing.T) {
	e := model.DefaultEndpoint(model.ProviderAnthropic)
	e.MaxRetries = -1
	_, err := New(Options{Endpoint: e})
	if err == nil || !strings.Contains(err.Error(), "model.anthropic.max_retries") || !strings.Contains(err.Error(), "model.anthropic.model: required") {
		t.Fatalf("err = %v", err)
	}
}

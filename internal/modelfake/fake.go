// Package modelfake holds fakes of an OpenAI-compatible chat completions
// server and of the Anthropic messages API, for tests. They speak the
// real wire formats on loopback (httptest), as server-sent events in
// small chunks when a request asks for a stream. They misbehave the way
// weak models do: tool calls written into the text, cut-off JSON
// arguments, tools ignored, requests beyond the context window, slow
// answers. With Caching set they keep a prompt cache as the real APIs
// do and report it in the real usage fields.
package modelfake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// Turn is one scripted answer.
type Turn struct {
	// Text is the answer's text content (where a weak model leaks calls).
	Text string
	// Calls are proper tool calls; Args is sent as is, so it may be cut
	// off or not JSON at all (OpenAI carries arguments as a string).
	Calls []Call
	// Delay is waited before answering (the client may time out first).
	Delay time.Duration
	// Status, when not 0 or 200, answers with that HTTP status and Error.
	Status int
	Error  string
}

// Call is one proper tool call.
type Call struct{ ID, Name, Args string }

// FinalText answers every request after the last turn.
const FinalText = "Nothing more to do."

// Usage is what every answer reports when Caching is off.
const (
	UsageInput  = 100
	UsageOutput = 10
)

// Server is a fake model server. Requests holds every request body.
type Server struct {
	*httptest.Server
	// ContextTokens, when > 0, refuses a request whose prompt is longer
	// with the server's context error. The prompt is counted as a
	// server's tokenizer sees it: the text of the request (every string
	// in it, not the JSON around them) at four bytes a token.
	ContextTokens int
	// ChunkBytes is how many bytes of text or of tool-call arguments one
	// streamed event carries, when a request asks for a stream (0: 5, so
	// a leaked call is always split across many chunks).
	ChunkBytes int
	// Caching, when set, counts each request's input from its body (as
	// PromptTokens does, segment by segment) and keeps a prompt cache:
	// OpenAI's automatic prefix cache (usage.prompt_tokens_details.
	// cached_tokens) or Anthropic's cache_control breakpoints
	// (usage.cache_read_input_tokens, cache_creation_input_tokens).
	Caching bool
	// CacheMinTokens is the shortest prefix the cache keeps (0: any).
	CacheMinTokens int

	mu       sync.Mutex
	cache    map[[32]byte]bool
	segments func(body []byte) []segment
	price    func(segs []segment) usage
	turns    []Turn
	next     int
	requests [][]byte
	wire     func(w http.ResponseWriter, t Turn, n int, u usage)
	stream   func(w http.ResponseWriter, t Turn, n int, withUsage bool, u usage)
	tooLong  func(w http.ResponseWriter, limit int)
}

// chunks splits s into pieces of ChunkBytes bytes (a piece may end inside
// a rune: the wire carries JSON strings, so it is cut on rune boundaries).
func (s *Server) chunks(text string) []string {
	size := s.ChunkBytes
	if size <= 0 {
		size = 5
	}
	var out []string
	for len(text) > 0 {
		n := min(size, len(text))
		for n < len(text) && !utf8.RuneStart(text[n]) {
			n++
		}
		out = append(out, text[:n])
		text = text[n:]
	}
	return out
}

// event writes one server-sent event ("" name: data only).
func event(w http.ResponseWriter, name string, v any) {
	if name != "" {
		fmt.Fprintf(w, "event: %s\n", name)
	}
	data, _ := json.Marshal(v)
	fmt.Fprintf(w, "data: %s\n\n", data)
}

// streamReq is what a request body says about streaming.
type streamReq struct {
	Stream  bool `json:"stream"`
	Options struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func parseStream(body []byte) streamReq {
	var req streamReq
	_ = json.Unmarshal(body, &req)
	return req
}

// Script replaces the turns still to come with turns (a next run against
// the same server: its cache is kept).
func (s *Server) Script(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns, s.next = turns, 0
}

// Requests returns the request bodies received so far.
func (s *Server) Requests() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.requests...)
}

func (s *Server) serve(path string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != path {
			http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.requests = append(s.requests, body)
		t := Turn{Text: FinalText}
		if s.next < len(s.turns) {
			t = s.turns[s.next]
		}
		s.next++
		n := s.next
		u := usage{input: UsageInput, output: UsageOutput}
		if s.Caching {
			u = s.price(s.segments(body))
			u.output = UsageOutput
		}
		s.mu.Unlock()
		if t.Delay > 0 {
			select {
			case <-time.After(t.Delay):
			case <-r.Context().Done():
				return
			}
		}
		if sr := parseStream(body); sr.Stream && (t.Status == 0 || t.Status == http.StatusOK) && (s.ContextTokens == 0 || PromptTokens(body) <= s.ContextTokens) {
			w.Header().Set("Content-Type", "text/event-stream")
			s.stream(w, t, n, sr.Options.IncludeUsage, u)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if s.ContextTokens > 0 && PromptTokens(body) > s.ContextTokens {
			s.tooLong(w, s.ContextTokens)
			return
		}
		if t.Status != 0 && t.Status != http.StatusOK {
			w.WriteHeader(t.Status)
			_, _ = io.WriteString(w, t.Error)
			return
		}
		s.wire(w, t, n, u)
	}
}

// PromptTokens counts a request body as ContextTokens does: the bytes of
// every string in it (keys excluded), four to a token, rounded up. A body
// that is not JSON counts whole.
func PromptTokens(body []byte) int {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return (len(body) + 3) / 4
	}
	return (textBytes(v) + 3) / 4
}

func textBytes(v any) int {
	switch x := v.(type) {
	case string:
		return len(x)
	case []any:
		n := 0
		for _, e := range x {
			n += textBytes(e)
		}
		return n
	case map[string]any:
		n := 0
		for _, e := range x {
			n += textBytes(e)
		}
		return n
	}
	return 0
}

func newServer(t testing.TB, path string, turns []Turn) *Server {
	s := &Server{turns: turns, cache: map[[32]byte]bool{}}
	s.Server = httptest.NewServer(s.serve(path))
	t.Cleanup(s.Close)
	return s
}

func write(w http.ResponseWriter, v any) {
	data, _ := json.Marshal(v)
	_, _ = w.Write(data)
}

// OpenAI returns a chat completions server; the client's base_url is
// URL + "/v1".
func OpenAI(t testing.TB, turns ...Turn) *Server {
	s := newServer(t, "/v1/chat/completions", turns)
	s.segments, s.price = openaiSegments, s.openaiCache
	s.wire = func(w http.ResponseWriter, t Turn, n int, u usage) {
		msg := map[string]any{"role": "assistant", "content": nil}
		if t.Text != "" {
			msg["content"] = t.Text
		}
		finish := "stop"
		if len(t.Calls) > 0 {
			var calls []any
			for i, c := range t.Calls {
				id := c.ID
				if id == "" {
					id = fmt.Sprintf("call_%d_%d", n, i+1)
				}
				calls = append(calls, map[string]any{"id": id, "type": "function",
					"function": map[string]any{"name": c.Name, "arguments": c.Args}})
			}
			msg["tool_calls"], finish = calls, "tool_calls"
		}
		write(w, map[string]any{
			"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1764547200, "model": "fake",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
			"usage":   openaiUsage(u),
		})
	}
	s.stream = func(w http.ResponseWriter, t Turn, n int, withUsage bool, u usage) {
		chunk := func(delta map[string]any, finish any) map[string]any {
			return map[string]any{"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion.chunk", "created": 1764547200, "model": "fake",
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}}}
		}
		event(w, "", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
		for _, piece := range s.chunks(t.Text) {
			event(w, "", chunk(map[string]any{"content": piece}, nil))
		}
		finish := "stop"
		for i, c := range t.Calls {
			id := c.ID
			if id == "" {
				id = fmt.Sprintf("call_%d_%d", n, i+1)
			}
			event(w, "", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": id, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil))
			for _, piece := range s.chunks(c.Args) {
				event(w, "", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": piece}}}}, nil))
			}
			finish = "tool_calls"
		}
		event(w, "", chunk(map[string]any{}, finish))
		if !withUsage { // OpenAI sends usage in a stream only when asked
			_, _ = io.WriteString(w, "data: [DONE]\n\n")
			return
		}
		event(w, "", map[string]any{"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion.chunk", "created": 1764547200, "model": "fake",
			"choices": []any{}, "usage": openaiUsage(u)})
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}
	s.tooLong = func(w http.ResponseWriter, limit int) {
		w.WriteHeader(http.StatusBadRequest)
		write(w, map[string]any{"error": map[string]any{"message": fmt.Sprintf("This model's maximum context length is %d tokens. Please reduce the length of the messages.", limit),
			"type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
	}
	return s
}

// Anthropic returns a messages API server; the client's base_url is URL.
// A call's Args must be a JSON object here (tool_use input is one on the
// wire); cut-off JSON can only be leaked into Text.
func Anthropic(t testing.TB, turns ...Turn) *Server {
	s := newServer(t, "/v1/messages", turns)
	s.segments, s.price = anthropicSegments, s.anthropicCache
	s.wire = func(w http.ResponseWriter, t Turn, n int, u usage) {
		var content []any
		if t.Text != "" {
			content = append(content, map[string]any{"type": "text", "text": t.Text})
		}
		stop := "end_turn"
		for i, c := range t.Calls {
			id := c.ID
			if id == "" {
				id = fmt.Sprintf("toolu_%d_%d", n, i+1)
			}
			content = append(content, map[string]any{"type": "tool_use", "id": id, "name": c.Name, "input": json.RawMessage(c.Args)})
			stop = "tool_use"
		}
		if content == nil {
			content = []any{}
		}
		write(w, map[string]any{
			"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": "fake", "content": content,
			"stop_reason": stop, "stop_sequence": nil, "usage": anthropicUsage(u, u.output),
		})
	}
	s.stream = func(w http.ResponseWriter, t Turn, n int, _ bool, u usage) {
		event(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": fmt.Sprintf("msg_%d", n), "type": "message",
			"role": "assistant", "model": "fake", "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
			"usage": anthropicUsage(u, 1)}})
		index := 0
		if t.Text != "" {
			event(w, "content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
			for _, piece := range s.chunks(t.Text) {
				event(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": piece}})
			}
			event(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
			index++
		}
		stop := "end_turn"
		for i, c := range t.Calls {
			id := c.ID
			if id == "" {
				id = fmt.Sprintf("toolu_%d_%d", n, i+1)
			}
			event(w, "content_block_start", map[string]any{"type": "content_block_start", "index": index,
				"content_block": map[string]any{"type": "tool_use", "id": id, "name": c.Name, "input": map[string]any{}}})
			for _, piece := range s.chunks(c.Args) {
				event(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": piece}})
			}
			event(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
			index++
			stop = "tool_use"
		}
		event(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": UsageOutput}})
		event(w, "message_stop", map[string]any{"type": "message_stop"})
	}
	s.tooLong = func(w http.ResponseWriter, limit int) {
		w.WriteHeader(http.StatusBadRequest)
		write(w, map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error",
			"message": fmt.Sprintf("prompt is too long: more than %d tokens", limit)}})
	}
	return s
}

// openaiUsage is the usage object of a completion: prompt_tokens counts
// the cached tokens too.
func openaiUsage(u usage) map[string]any {
	return map[string]any{"prompt_tokens": u.input, "completion_tokens": u.output, "total_tokens": u.input + u.output,
		"prompt_tokens_details": map[string]any{"cached_tokens": u.read}}
}

// anthropicUsage is the usage object of a message: input_tokens counts
// only the input after the last cache breakpoint.
func anthropicUsage(u usage, output int) map[string]any {
	return map[string]any{"input_tokens": u.input - u.read - u.write, "output_tokens": output,
		"cache_read_input_tokens": u.read, "cache_creation_input_tokens": u.write}
}

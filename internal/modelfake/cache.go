package modelfake

import (
	"crypto/sha256"
	"encoding/json"
)

// usage is what one answer reports: total input, output, and the parts of
// the input read from and written to the cache.
type usage struct {
	input, output, read, write int
}

// segment is one cacheable unit of a request in wire order: a tool, a
// system block, a message's content block. breakpoint marks an Anthropic
// cache_control on it.
type segment struct {
	canon      []byte
	tokens     int
	breakpoint bool
}

// prefixKey chains the hash of a prefix with the next segment.
func prefixKey(prev [32]byte, s segment) [32]byte {
	h := sha256.New()
	h.Write(prev[:])
	h.Write(s.canon)
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// newSegment canonicalises v (a decoded JSON value) without its
// cache_control, so a breakpoint never changes what the prefix is.
func newSegment(role string, v any) segment {
	bp := false
	if m, ok := v.(map[string]any); ok {
		if _, ok := m["cache_control"]; ok {
			bp = true
			c := make(map[string]any, len(m))
			for k, x := range m {
				if k != "cache_control" {
					c[k] = x
				}
			}
			v = c
		}
	}
	canon, _ := json.Marshal([]any{role, v}) // map keys sorted: one spelling
	return segment{canon: canon, tokens: (textBytes(v) + 3) / 4, breakpoint: bp}
}

// blocks returns a content value as a list: a string is one text block.
func blocks(v any) []any {
	switch x := v.(type) {
	case []any:
		return x
	case nil:
		return nil
	case string:
		return []any{map[string]any{"type": "text", "text": x}}
	}
	return []any{v}
}

// anthropicSegments splits a messages request: tools, system, messages.
func anthropicSegments(body []byte) []segment {
	var req struct {
		Tools    []any `json:"tools"`
		System   any   `json:"system"`
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	var out []segment
	for _, t := range req.Tools {
		out = append(out, newSegment("tool", t))
	}
	for _, b := range blocks(req.System) {
		out = append(out, newSegment("system", b))
	}
	for _, m := range req.Messages {
		for _, b := range blocks(m.Content) {
			out = append(out, newSegment(m.Role, b))
		}
	}
	return out
}

// openaiSegments splits a chat completions request: tools, then each
// message whole.
func openaiSegments(body []byte) []segment {
	var req struct {
		Tools    []any `json:"tools"`
		Messages []any `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	var out []segment
	for _, t := range req.Tools {
		out = append(out, newSegment("tool", t))
	}
	for _, m := range req.Messages {
		out = append(out, newSegment("message", m))
	}
	return out
}

func sumTokens(segs []segment) int {
	n := 0
	for _, s := range segs {
		n += s.tokens
	}
	return n
}

// anthropicCache prices a request as the messages API does: the longest
// prefix ending at or before the last breakpoint that an earlier request
// wrote is read; the rest up to the last breakpoint is written; what
// follows it is plain input. Every breakpoint's prefix is written.
// Called with s.mu held.
func (s *Server) anthropicCache(segs []segment) usage {
	last := -1
	for i, sg := range segs {
		if sg.breakpoint {
			last = i
		}
	}
	u := usage{input: sumTokens(segs)}
	if last < 0 {
		return u
	}
	var key [32]byte
	read, upto := -1, 0
	for i := 0; i <= last; i++ {
		key = prefixKey(key, segs[i])
		upto += segs[i].tokens
		if s.cache[key] {
			read = i
			u.read = upto
		}
		if segs[i].breakpoint && upto >= s.CacheMinTokens {
			s.cache[key] = true
		}
	}
	u.write = sumTokens(segs[read+1 : last+1])
	if sumTokens(segs[:last+1]) < s.CacheMinTokens {
		u.write = 0
	}
	return u
}

// openaiCache prices a request as OpenAI's automatic prefix cache does:
// the longest prefix of whole segments seen in an earlier request is
// read (when it reaches CacheMinTokens); every prefix is kept.
// Called with s.mu held.
func (s *Server) openaiCache(segs []segment) usage {
	u := usage{input: sumTokens(segs)}
	var key [32]byte
	upto := 0
	for _, sg := range segs {
		key = prefixKey(key, sg)
		upto += sg.tokens
		if s.cache[key] {
			u.read = upto
		}
		s.cache[key] = true
	}
	if u.read < s.CacheMinTokens {
		u.read = 0
	}
	return u
}

package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// wholeError sends a request and compares the whole error answer.
func wholeError(t *testing.T, e *env, method, path, body string, status int, want string) {
	t.Helper()
	got, out, _ := e.do(method, path, adminSecret, body)
	data, _ := json.Marshal(out)
	if got != status || string(data) != want {
		t.Errorf("%s %s %.80s:\n got  %d %s\n want %d %s", method, path, body, got, data, status, want)
	}
}

func silenceBody(matchers string) string {
	return `{"matchers":` + matchers + `,"comment":"c","duration":"1h"}`
}

func TestSilenceGlobsAndTagsChecked(t *testing.T) {
	e := newEnv(t, testTokens, nil)
	tags := make([]string, 50000)
	for i := range tags {
		tags[i] = fmt.Sprintf("t%d", i)
	}
	many, _ := json.Marshal(map[string]any{"tags": tags})
	long := strings.Repeat("a", 257)
	cases := []struct{ matchers, want string }{
		{`{"resource":"[["}`, `{"details":{"field":"matchers.resource"},"error":"invalid_request","message":"matchers.resource: '[' at byte 0 is not a wildcard: only * (any run) and ? (one character) are"}`},
		{`{"resource":"vm/{a,b}"}`, `{"details":{"field":"matchers.resource"},"error":"invalid_request","message":"matchers.resource: '{' at byte 3 is not a wildcard: only * (any run) and ? (one character) are"}`},
		{`{"resource":"vm\\*"}`, `{"details":{"field":"matchers.resource"},"error":"invalid_request","message":"matchers.resource: '\\\\' at byte 2 is not a wildcard: only * (any run) and ? (one character) are"}`},
		{`{"resource":"` + long + `"}`, `{"details":{"field":"matchers.resource"},"error":"invalid_request","message":"matchers.resource: glob is longer than 256 bytes"}`},
		{`{"resource":"vm/\u0007"}`, `{"details":{"field":"matchers.resource"},"error":"invalid_request","message":"matchers.resource: glob can never match a resource id: control character '\\a' at byte 3"}`},
		{string(many), `{"details":{"field":"matchers.tags"},"error":"invalid_request","message":"matchers.tags: 50000 tags, at most 32"}`},
		{`{"tags":["prod",""]}`, `{"details":{"field":"matchers.tags[1]"},"error":"invalid_request","message":"matchers.tags[1]: empty"}`},
		{`{"tags":["a\u0000b"]}`, `{"details":{"field":"matchers.tags[0]"},"error":"invalid_request","message":"matchers.tags[0]: control character '\\x00' at byte 1"}`},
	}
	for _, c := range cases {
		wholeError(t, e, "POST", "/api/v1/silences", silenceBody(c.matchers), http.StatusBadRequest, c.want)
	}
	if active, err := e.store.Silences(t.Context(), e.now, false); err != nil || len(active) != 0 {
		t.Fatalf("refused silences were stored: %v %v", active, err)
	}
	// The limits themselves are accepted.
	ok := make([]string, 32)
	for i := range ok {
		ok[i] = fmt.Sprintf("t%d", i)
	}
	fine, _ := json.Marshal(map[string]any{"tags": ok, "resource": "vm/*-?" + strings.Repeat("a", 250)})
	if got, out, _ := e.do("POST", "/api/v1/silences", adminSecret, silenceBody(string(fine))); got != 200 {
		t.Fatalf("32 tags and a 256-byte glob: %d %v", got, out)
	}
}

func TestMalformedQueriesName(t *testing.T) {
	e := newEnv(t, testTokens, nil)
	for _, path := range []string{"/api/v1/findings", "/api/v1/runs", "/api/v1/silences", "/api/v1/approvals"} {
		wholeError(t, e, "GET", path+"?cursor=%%%%", "", http.StatusBadRequest,
			`{"details":{"field":"cursor"},"error":"invalid_request","message":"cursor: \"%%%%\" is not valid (percent encoding, no ';')"}`)
		wholeError(t, e, "GET", path+"?limit=5&cur%zzsor=x", "", http.StatusBadRequest,
			`{"details":{"field":"query"},"error":"invalid_request","message":"query: parameter name \"cur%zzsor\" is not valid (percent encoding, no ';')"}`)
		wholeError(t, e, "GET", path+"?cursor=a;b", "", http.StatusBadRequest,
			`{"details":{"field":"cursor"},"error":"invalid_request","message":"cursor: \"a;b\" is not valid (percent encoding, no ';')"}`)
		wholeError(t, e, "GET", path+"?cursor=bm90LWEtY3Vyc29y", "", http.StatusBadRequest,
			`{"details":{"field":"cursor"},"error":"invalid_request","message":"cursor: not a cursor returned by a previous page of `+strings.TrimPrefix(path, "/api/v1/")+`"}`)
	}
}

package openai

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/model"
)

func TestChatErrorKinds(t *testing.T) {
	cases := []struct {
		name   string
		h      http.HandlerFunc
		kind   model.ErrorKind
		status int
	}{
		{"malformed json", jsonReply(200, `{"id": "x", "choices": [`), model.ErrorMalformed, 200},
		{"no choices", jsonReply(200, `{"id":"x","object":"chat.completion","choices":[]}`), model.ErrorMalformed, 200},
		{"nameless tool call", jsonReply(200, `{"choices":[{"finish_reason":"tool_calls","message":{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"arguments":"{}"}}]}}]}`), model.ErrorMalformed, 200},
		{"html from a proxy", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, "<html>bad gateway</html>")
		}, model.ErrorMalformed, 200},
		{"auth echoes key", jsonReply(401, `{"error":{"message":"Incorrect API key provided: `+testKey+`","type":"invalid_request_error"}}`), model.ErrorAuth, 401},
		{"bad request echoes key", jsonReply(400, `{"error":{"message":"bad header Bearer `+testKey+`"}}`), model.ErrorBadRequest, 400},
		{"forbidden", jsonReply(403, `{"error":{"message":"no"}}`), model.ErrorAuth, 403},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeServer(t, tc.h)
			c := newClient(t, srv.URL, nil)
			_, err := c.Chat(context.Background(), simpleRequest())
			var me *model.Error
			if !errors.As(err, &me) || me.Kind != tc.kind || me.Status != tc.status {
				t.Fatalf("err = %v (%+v), want kind %s status %d", err, me, tc.kind, tc.status)
			}
			if strings.Contains(err.Error(), testKey) || strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("error leaks the API key: %v", err)
			}
		})
	}
}

func TestChatTimeoutIsTransient(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(3 * time.Second):
		}
	})
	c := newClient(t, srv.URL, func(e *model.EndpointOptions) { e.Timeout = 150 * time.Millisecond })
	start := time.Now()
	_, err := c.Chat(context.Background(), simpleRequest())
	if model.KindOf(err) != model.ErrorTransient || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Fatalf("timeout not applied: %s", time.Since(start))
	}
}

func TestChatContextCanceled(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(3 * time.Second):
		}
	})
	c := newClient(t, srv.URL, func(e *model.EndpointOptions) { e.MaxRetries = 3 })
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := c.Chat(ctx, simpleRequest())
	if model.KindOf(err) != model.ErrorCanceled || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if srv.hits.Load() != 1 {
		t.Fatalf("a canceled call was retried: %d hits", srv.hits.Load())
	}
}

func TestChatConnectionRefusedIsTransient(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close()
	c := newClient(t, addr, nil)
	_, err := c.Chat(context.Background(), simpleRequest())
	if model.KindOf(err) != model.ErrorTransient || strings.Contains(err.Error(), testKey) {
		t.Fatalf("err = %v", err)
	}
}

package cluster

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestDecodeForwardedNamesTheField(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{`{"method":"","uri":"/api/v1/runs"}`, `forwarded request: method "" is not an HTTP method`},
		{`{"method":"PO ST","uri":"/api/v1/runs"}`, `forwarded request: method "PO ST" is not an HTTP method`},
		{`{"method":"POST","uri":"api/v1/runs"}`, `forwarded request: uri "api/v1/runs" must start with /`},
		{`{"method":"POST","uri":"/x","extra":1}`, `forwarded request: json: unknown field "extra"`},
		{`[]`, `forwarded request: json: cannot unmarshal array into Go value of type contracts.ForwardRequest`},
	} {
		_, err := decodeForwarded([]byte(tc.raw))
		if err == nil || err.Error() != tc.want {
			t.Errorf("decodeForwarded(%s) = %v, want %q", tc.raw, err, tc.want)
		}
	}
	r, err := decodeForwarded([]byte(`{"method":"POST","uri":"/api/v1/findings/abc/ack?x=1","header":{"Authorization":["Bearer t"]},"body":"e30="}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	if r.Method != "POST" || r.URL.Path != "/api/v1/findings/abc/ack" || r.URL.RawQuery != "x=1" || r.Header.Get("Authorization") != "Bearer t" || string(body) != "{}" {
		t.Fatalf("decoded %s %s %v %q", r.Method, r.URL, r.Header, body)
	}
}

func FuzzDecodeForwarded(f *testing.F) {
	f.Add([]byte(`{"method":"POST","uri":"/api/v1/runs","header":{"A":["b"]},"body":""}`))
	f.Add([]byte(`{"method":"GET","uri":"/"}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := decodeForwarded(raw)
		if err != nil {
			return
		}
		if r.Method == "" || !strings.HasPrefix(r.URL.RequestURI(), "/") {
			t.Fatalf("accepted %s %s", r.Method, r.URL)
		}
	})
}

// TestServedHere holds the routing table of a clustered instance: a
// standby answers reads and its own routes, and forwards every write,
// POST /-/reload included (its audit row is the writer's).
func TestServedHere(t *testing.T) {
	for _, tc := range []struct {
		writer       bool
		method, path string
		want         bool
	}{
		{true, "POST", "/api/v1/silences", true},
		{true, "POST", "/-/reload", true},
		{false, "GET", "/api/v1/findings", true},
		{false, "HEAD", "/api/v1/status", true},
		{false, "GET", "/-/healthz", true},
		{false, "POST", "/-/reload", false},
		{false, "POST", "/api/v1/silences", false},
		{false, "DELETE", "/api/v1/silences/abc", false},
		{false, "POST", "/api/v1/findings/abc/ack", false},
	} {
		r := httptest.NewRequest(tc.method, tc.path, nil)
		if got := servedHere(tc.writer, r); got != tc.want {
			t.Errorf("servedHere(writer=%v, %s %s) = %v, want %v", tc.writer, tc.method, tc.path, got, tc.want)
		}
	}
}

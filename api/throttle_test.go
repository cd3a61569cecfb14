package api_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/patrold/patrold/api"
)

// clientFrom is a client whose connections leave from ip (a loopback
// address: Linux routes all of 127.0.0.0/8 to lo).
func clientFrom(t *testing.T, ip string) *http.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	c := webClient(t)
	c.Transport = tr
	return c
}

// answer is a whole response as the throttle test compares it.
type answer struct {
	Status      int
	RetryAfter  string
	ContentType string
	Body        string
}

func call(t *testing.T, c *http.Client, method, u, token string) answer {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Content-Type"), string(b)}
}

// TestWrongTokensThrottled is the attack of 1000 wrong bearer tokens
// from one address. The first api.AuthFailureBurst answer 401; every
// later one answers 429 with Retry-After. A correct token from that
// address is refused the same way (the answer is no oracle). Another
// address is unaffected. Failed web logins count against the same
// address, and a login from a throttled address is refused before its
// token is looked at.
func TestWrongTokensThrottled(t *testing.T) {
	tokens := append(append([]api.Token(nil), testTokens...), api.Token{Name: "am", Secret: triggerSecret, Scope: api.ScopeTrigger})
	e := newEnv(t, tokens, nil)
	base := e.srv.URL
	attacker := clientFrom(t, "127.0.0.1")
	every := int(api.AuthFailureEvery.Seconds())
	unauthorized := answer{401, "", "application/json",
		`{"error":"unauthorized","message":"the bearer token is not valid","details":{}}` + "\n"}
	throttled := answer{429, fmt.Sprint(every), "application/json",
		fmt.Sprintf(`{"error":"auth_throttled","message":"too many failed tokens from this address: try again in %ds","details":{"retry_after_seconds":%d}}`, every, every) + "\n"}

	counts := map[answer]int{}
	for i := range 1000 {
		counts[call(t, attacker, "GET", base+"/api/v1/findings", fmt.Sprintf("guess-%04d-%s", i, strings.Repeat("x", 16)))]++
	}
	if want := map[answer]int{unauthorized: api.AuthFailureBurst, throttled: 1000 - api.AuthFailureBurst}; fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Fatalf("1000 wrong tokens answered\n%v\nwant\n%v", counts, want)
	}
	// The throttled address: every token refused the same way, on every
	// route that takes one; a request without a token is not a guess.
	for _, c := range []struct{ method, path, token string }{
		{"GET", "/api/v1/findings", readSecret},
		{"POST", "/api/v1/runs", adminSecret},
		{"POST", "/api/v1/hooks/alertmanager", triggerSecret},
	} {
		if got := call(t, attacker, c.method, base+c.path, c.token); got != throttled {
			t.Errorf("%s %s with a correct token from the throttled address: %+v", c.method, c.path, got)
		}
	}
	noToken := answer{401, "", "application/json", `{"error":"unauthorized","message":"a bearer token is required","details":{}}` + "\n"}
	if got := call(t, attacker, "GET", base+"/api/v1/findings", ""); got != noToken {
		t.Errorf("no token from the throttled address: %+v", got)
	}
	if got := call(t, attacker, "GET", base+"/healthz", ""); got.Status != http.StatusOK {
		t.Errorf("healthz from the throttled address: %+v", got)
	}
	// The web login from that address: refused before the token is read.
	_, page, _ := webGet(t, attacker, base+"/ui/login")
	code, page, h := webPost(t, attacker, base+"/ui/login", url.Values{"csrf": {csrfField.FindStringSubmatch(page)[1]}, "token": {adminSecret}}, nil)
	flash := fmt.Sprintf(`<p class="flash" id="flash">Too many failed logins from your address: try again in %ds.</p>`, every)
	if code != http.StatusTooManyRequests || h.Get("Retry-After") != fmt.Sprint(every) || !strings.Contains(page, flash) || sessionSet(h) {
		t.Fatalf("login from the throttled address: %d %v\n%s", code, h, page)
	}
	if n := strings.Count(e.logs.String(), `"msg":"api client throttled"`); n != 1 {
		t.Errorf("%d throttle log lines, want 1:\n%s", n, e.logs.String())
	}

	// Another address is unaffected.
	other := clientFrom(t, "127.0.0.2")
	if got := call(t, other, "GET", base+"/api/v1/findings", readSecret); got.Status != http.StatusOK {
		t.Fatalf("a correct token from another address: %+v", got)
	}
	if got := call(t, other, "GET", base+"/api/v1/findings", "wrong-token-0123456789"); got != unauthorized {
		t.Fatalf("a wrong token from another address: %+v", got)
	}

	// After AuthFailureEvery one more try is allowed; a failure uses it.
	e.now = e.now.Add(api.AuthFailureEvery)
	if got := call(t, attacker, "GET", base+"/api/v1/findings", readSecret); got.Status != http.StatusOK {
		t.Fatalf("a correct token after the wait: %+v", got)
	}
	if got := call(t, attacker, "GET", base+"/api/v1/findings", "wrong-token-0123456789"); got != unauthorized {
		t.Fatalf("a wrong token after the wait: %+v", got)
	}
	if got := call(t, attacker, "GET", base+"/api/v1/findings", readSecret); got != throttled {
		t.Fatalf("a correct token after the allowed failure: %+v", got)
	}

	// Failed logins count for the address like failed bearer tokens.
	web := clientFrom(t, "127.0.0.3")
	for i := range api.AuthFailureBurst {
		_, page, _ := webGet(t, web, base+"/ui/login")
		code, _, _ := webPost(t, web, base+"/ui/login", url.Values{"csrf": {csrfField.FindStringSubmatch(page)[1]}, "token": {fmt.Sprintf("guess-%04d-xxxxxxxxxxxx", i)}}, nil)
		if code != http.StatusUnauthorized {
			t.Fatalf("wrong login %d: %d", i, code)
		}
	}
	if got := call(t, web, "GET", base+"/api/v1/findings", readSecret); got != throttled {
		t.Fatalf("a bearer token after %d failed logins: %+v", api.AuthFailureBurst, got)
	}
}

// sessionSet reports whether h sets a session cookie.
func sessionSet(h http.Header) bool {
	for _, c := range h.Values("Set-Cookie") {
		if strings.HasPrefix(c, "patrold_session=") && !strings.HasPrefix(c, "patrold_session=;") {
			return true
		}
	}
	return false
}

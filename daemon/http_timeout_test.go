package daemon_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/api"
)

// Bounds the slow-client tests run the daemon with.
const (
	testHeaderTimeout = 300 * time.Millisecond
	testReadTimeout   = 700 * time.Millisecond
	// closeSlack is what the server may take past its bound to close.
	closeSlack = 2 * time.Second
)

// timedDaemon is a daemon with short read timeouts, a small body limit and
// an admin token; it returns the API's address.
func timedDaemon(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	useSnapshot(t, dir, "faults.json")
	cfg := testConfig(t, dir, "", "")
	cfg.HTTP.ReadHeaderTimeout = testHeaderTimeout
	cfg.HTTP.ReadTimeout = testReadTimeout
	cfg.HTTP.MaxBodyBytes = 4096
	cfg.HTTP.Tokens = []api.TokenConfig{{Name: "ops", Token: "admin-secret-0001", Scope: "admin"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return start(t, cfg).HTTPAddr()
}

// closedWithin writes head, then trickles one byte of body every 50ms
// (when trickle is set) and reports how long the server took to close
// the connection. It fails the test if the connection is still open
// after bound+closeSlack.
func closedWithin(t *testing.T, addr, head string, trickle bool, bound time.Duration) time.Duration {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	begin := time.Now()
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	if trickle {
		go func() {
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if _, err := conn.Write([]byte("x")); err != nil {
						return
					}
				}
			}
		}()
	}
	limit := bound + closeSlack
	if err := conn.SetReadDeadline(begin.Add(limit)); err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(io.Discard, conn)
	took := time.Since(begin)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after %s (bound %s)", took.Round(time.Millisecond), bound)
	}
	return took
}

func TestSlowClientsAreCutOff(t *testing.T) {
	addr := timedDaemon(t)
	post := func(auth string, length int) string {
		return fmt.Sprintf("POST /api/v1/silences HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", auth, length)
	}
	admin := "Authorization: Bearer admin-secret-0001\r\n"
	cases := []struct {
		name    string
		head    string
		trickle bool
		bound   time.Duration
	}{
		{"header never finished", "POST /api/v1/silences HTTP/1.1\r\nHost: x\r\nX-Slow: ", true, testHeaderTimeout},
		{"body sent slowly, no token", post("", 2000), true, testReadTimeout},
		{"body sent slowly, admin token", post(admin, 2000), true, testReadTimeout},
		{"content-length never delivered, no token", post("", 2000), false, testReadTimeout},
		{"content-length never delivered, admin token", post(admin, 2000), false, testReadTimeout},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			took := closedWithin(t, addr, c.head, c.trickle, c.bound)
			if took < c.bound/2 {
				t.Fatalf("closed after %s, before the bound %s: the test measured something else", took, c.bound)
			}
		})
	}
}

func TestOversizedBodyRefusedBeforeAuth(t *testing.T) {
	addr := timedDaemon(t)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// No token, a body over the 4096-byte limit declared and never sent.
	head := "POST /api/v1/silences HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(testReadTimeout / 2))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer before the read timeout: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	want := `{"error":"invalid_request","message":"body: Content-Length 100000 is larger than the limit of 4096 bytes","details":{"field":"body","limit_bytes":4096}}`
	if res.StatusCode != http.StatusRequestEntityTooLarge || strings.TrimSpace(string(body)) != want {
		t.Fatalf("answer %d %s, want 413 %s", res.StatusCode, body, want)
	}
}

func TestSlowClientsDoNotHoldTheAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("opens many connections")
	}
	addr := timedDaemon(t)
	// 50 clients that never send their declared body.
	conns := make([]net.Conn, 0, 50)
	for range 50 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "POST /api/v1/silences HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	deadline := time.Now().Add(testReadTimeout + closeSlack)
	for i, c := range conns {
		_ = c.SetReadDeadline(deadline)
		if _, err := io.Copy(io.Discard, c); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("connection %d still open past %s", i, testReadTimeout+closeSlack)
			}
		}
	}
}

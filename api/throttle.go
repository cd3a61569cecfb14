package api

import (
	"math"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Failed authentication is throttled per client address
// (docs/API.md#throttling):
//   - a bearer token or a login token that matches nothing is a failure;
//   - an address may fail AuthFailureBurst times, then once more every
//     AuthFailureEvery;
//   - past that, every request from it that presents a token is answered
//     429 with Retry-After, before the token is looked at. A correct
//     token is refused too, so the answer tells a guesser nothing.
const (
	AuthFailureBurst = 20
	AuthFailureEvery = 3 * time.Second
	// MaxThrottledAddresses bounds the table of addresses; the least
	// throttled is forgotten first when it is full.
	MaxThrottledAddresses = 8192
)

// authThrottle counts failures by client address (an IPv6 address by
// its /64, which one host usually holds whole).
type authThrottle struct {
	now func() time.Time

	mu    sync.Mutex
	addrs map[string]*rate.Limiter
}

func newAuthThrottle(now func() time.Time) *authThrottle {
	return &authThrottle{now: now, addrs: map[string]*rate.Limiter{}}
}

// clientKey is the throttled unit of a request's peer address. It is the
// connection's address: a header such as X-Forwarded-For is not trusted.
func clientKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return ip.String()
}

// wait is how long the address must wait before it may present a token
// again; 0 when it may now.
func (t *authThrottle) wait(key string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	lim := t.addrs[key]
	if lim == nil {
		return 0
	}
	tokens := lim.TokensAt(t.now())
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) * float64(AuthFailureEvery))
}

// fail counts one failure of the address. It reports whether the address
// has just used up its allowance (to log that once).
func (t *authThrottle) fail(key string) (exhausted bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	lim := t.addrs[key]
	if lim == nil {
		if len(t.addrs) >= MaxThrottledAddresses {
			t.forgetLocked(now)
		}
		lim = rate.NewLimiter(rate.Every(AuthFailureEvery), AuthFailureBurst)
		t.addrs[key] = lim
	}
	lim.AllowN(now, 1)
	return lim.TokensAt(now) < 1
}

// forgetLocked drops the addresses whose allowance has refilled, or else
// the one closest to it.
func (t *authThrottle) forgetLocked(now time.Time) {
	most, mostKey := -1.0, ""
	for k, lim := range t.addrs {
		tokens := lim.TokensAt(now)
		if tokens >= AuthFailureBurst {
			delete(t.addrs, k)
			continue
		}
		if tokens > most {
			most, mostKey = tokens, k
		}
	}
	if len(t.addrs) >= MaxThrottledAddresses {
		delete(t.addrs, mostKey)
	}
}

// retrySeconds is the Retry-After value of a wait: whole seconds, at
// least 1.
func retrySeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

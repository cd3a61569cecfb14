package natstest

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/bus/embedded"
)

// User is one user's connection to a server with permissions; every
// permission violation the server reports lands in its list.
type User struct {
	Name string
	NC   *nats.Conn
	JS   jetstream.JetStream

	mu         sync.Mutex
	violations []string
}

// ConnectAs connects to url as the user name (opts carry its
// credentials); the connection closes when the test ends.
func ConnectAs(t testing.TB, url, name string, opts ...nats.Option) *User {
	t.Helper()
	u := &User{Name: name}
	opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		u.mu.Lock()
		u.violations = append(u.violations, err.Error())
		u.mu.Unlock()
	}))
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(nc.Close)
	u.NC = nc
	if u.JS, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	return u
}

// Denied runs do and waits for the server's permission violation on
// subject (kind Publish or Subscription): what do returns is not the
// proof (a core publish returns before the server answers).
func (u *User) Denied(t testing.TB, what, kind, subject string, do func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = do(ctx)
	want := `permissions violation for ` + strings.ToLower(kind) + ` to "` + strings.ToLower(subject) + `"`
	deadline := time.Now().Add(10 * time.Second)
	for {
		u.mu.Lock()
		seen := strings.Join(u.violations, "; ")
		u.mu.Unlock()
		if strings.Contains(strings.ToLower(seen), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is not refused %s: violations %q", u.Name, what, seen)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ConnectRole connects to the embedded server at url as role r, with the
// role's seed that serve generated in dataDir; the connection closes
// when the test ends.
func ConnectRole(t testing.TB, url, dataDir string, r embedded.Role, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nk, err := nats.NkeyOptionFromSeed(filepath.Join(dataDir, embedded.SeedFile(r)))
	if err != nil {
		t.Fatalf("credentials of %s: %v", r, err)
	}
	nc, err := nats.Connect(url, append([]nats.Option{nk}, opts...)...)
	if err != nil {
		t.Fatalf("connect as %s: %v", r, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Try sends a request on subject and reports whether the server let it
// through: true when an answer came (an API error is an answer), false
// when the server reported a publish permission violation on subject.
// Neither within 10 s fails the test.
func (u *User) Try(t testing.TB, subject string, body []byte) bool {
	t.Helper()
	inbox := u.NC.NewRespInbox()
	sub, err := u.NC.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	u.mu.Lock()
	seen := len(u.violations)
	u.mu.Unlock()
	if err := u.NC.PublishRequest(subject, inbox, body); err != nil {
		t.Fatalf("%s: %s: %v", u.Name, subject, err)
	}
	want := `permissions violation for publish to "` + strings.ToLower(subject) + `"`
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := sub.NextMsg(10 * time.Millisecond); err == nil {
			return true
		}
		u.mu.Lock()
		refused := slices.ContainsFunc(u.violations[seen:], func(v string) bool { return strings.Contains(strings.ToLower(v), want) })
		u.mu.Unlock()
		if refused {
			return false
		}
	}
	t.Fatalf("%s: %s: neither an answer nor a refusal", u.Name, subject)
	return false
}

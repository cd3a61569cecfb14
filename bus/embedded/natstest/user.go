package natstest

import (
	"context"
	"path/filepath"
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

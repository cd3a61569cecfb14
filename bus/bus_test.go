package bus

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/internal/testkit"
)

func TestBusEmbeddedServesTheStreamOnItsListener(t *testing.T) {
	reg := prometheus.NewRegistry()
	store := t.TempDir()
	b, err := New(Options{Embedded: EmbeddedOptions{Listen: "127.0.0.1:0", StoreDir: store},
		Stream: StreamOptions{MaxAge: 48 * time.Hour, MaxBytes: 64 << 20}}, nil, reg, WithEmbedded(embedded.Start))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()

	// A separate TCP client (what `nats sub 'patrol.>'` would be) sees the
	// stream the bus created.
	_, js := connect(t, b.ClientURL())
	st, err := js.Stream(ctx, "PATROL")
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	if len(cfg.Subjects) != 1 || cfg.Subjects[0] != "patrol.>" || cfg.Storage != jetstream.FileStorage ||
		cfg.MaxAge != 48*time.Hour || cfg.MaxBytes != 64<<20 || cfg.Replicas != 1 || cfg.Duplicates != DefaultStreamDuplicate {
		t.Fatalf("stream config %+v", cfg)
	}
	if _, err := os.Stat(filepath.Join(store, "jetstream")); err != nil {
		t.Fatalf("JetStream files not under the store dir: %v", err)
	}
	if got := testutil.ToFloat64(b.m.connected); got != 1 {
		t.Fatalf("patrold_bus_connected %v", got)
	}
	if !strings.HasPrefix(b.Source(), "patrold/") {
		t.Fatalf("default source %q", b.Source())
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := nats.Connect(b.ClientURL(), nats.Timeout(300*time.Millisecond)); err == nil {
		t.Fatal("embedded server still accepts connections after Close")
	}
}

// Restarting the bus on the same store dir keeps the stream's messages and
// updates its limits.
func TestBusRestartKeepsStreamAndAppliesNewLimits(t *testing.T) {
	store := t.TempDir()
	start := func(maxAge time.Duration) *Bus {
		b, err := New(Options{Embedded: EmbeddedOptions{Listen: "127.0.0.1:0", StoreDir: store},
			Stream: StreamOptions{MaxAge: maxAge}}, nil, nil, WithEmbedded(embedded.Start))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return b
	}
	b := start(time.Hour)
	if _, err := b.JetStream().Publish(context.Background(), "patrol.runs.completed", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	b = start(2 * time.Hour)
	defer func() { _ = b.Close() }()
	st, err := b.JetStream().Stream(context.Background(), "PATROL")
	if err != nil {
		t.Fatal(err)
	}
	info := st.CachedInfo()
	if info.State.Msgs != 1 || info.Config.MaxAge != 2*time.Hour {
		t.Fatalf("after restart: %d msgs, max_age %s", info.State.Msgs, info.Config.MaxAge)
	}
}

func TestBusConnectsToExternalServerWithTokenFile(t *testing.T) {
	sopts, err := embedded.ServerOptions("127.0.0.1:0", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sopts.Authorization = "s3cret-token"
	srv, err := embedded.StartServer(sopts, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good"), filepath.Join(dir, "bad")
	if err := os.WriteFile(good, []byte("s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("wrong"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	b, err := New(Options{URL: srv.ClientURL(), TokenFile: good}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(ctx); err != nil {
		t.Fatalf("start with the right token: %v", err)
	}
	if _, err := b.JetStream().Stream(ctx, "PATROL"); err != nil {
		t.Fatalf("stream not created on the external server: %v", err)
	}
	_ = b.Close()
	if srv.Running() == false {
		t.Fatal("closing a bus with an external URL stopped the server")
	}

	b, err = New(Options{URL: srv.ClientURL(), TokenFile: bad}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(ctx); err == nil || !strings.Contains(err.Error(), "nats.url") || !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("wrong token: %v", err)
	}
}

// A Bus built without an embedded server refuses an empty URL at Start,
// naming the key, and leaves nothing running.
func TestBusWithoutEmbeddedRefusesAnEmptyURL(t *testing.T) {
	b, err := New(Options{Embedded: EmbeddedOptions{Listen: "127.0.0.1:0", StoreDir: t.TempDir()}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = b.Start(context.Background())
	if want := "nats.url: empty, and this command runs no embedded server"; err == nil || err.Error() != want {
		t.Fatalf("Start: %v, want %q", err, want)
	}
	if b.Conn() != nil || b.srv != nil {
		t.Fatalf("after a refused Start: conn %v, server %v", b.Conn(), b.srv)
	}
}

func TestBusStartErrorsNameTheKey(t *testing.T) {
	cases := map[string]Options{
		"nats.embedded.store_dir": {Embedded: EmbeddedOptions{Listen: "127.0.0.1:0"}},
		"nats.token_file":         {URL: "nats://127.0.0.1:1", TokenFile: filepath.Join(t.TempDir(), "missing")},
		"nats.credentials_file":   {URL: "nats://127.0.0.1:1", CredentialsFile: filepath.Join(t.TempDir(), "missing")},
		"nats.tls.ca_file":        {URL: "nats://127.0.0.1:1", TLS: TLSOptions{CAFile: filepath.Join(t.TempDir(), "missing")}},
	}
	for key, o := range cases {
		b, err := New(o, nil, nil, WithEmbedded(embedded.Start))
		if err != nil {
			t.Fatalf("%s: New: %v", key, err)
		}
		if err := b.Start(context.Background()); err == nil || !strings.HasPrefix(err.Error(), key+":") {
			t.Errorf("%s: Start error %v", key, err)
		}
	}
}

// TestEmbeddedTakenPortFailsAtOnce: a fixed embedded port another process
// holds fails the start at once, naming the key, instead of after the
// ready timeout.
func TestEmbeddedTakenPortFailsAtOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	b, err := New(Options{Embedded: EmbeddedOptions{Listen: ln.Addr().String(), StoreDir: t.TempDir()}}, nil, nil, WithEmbedded(embedded.Start))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = b.Start(context.Background())
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the start took %s", took)
	}
	want := "nats.embedded.listen: " + ln.Addr().String() + " cannot be bound (is another patrold or NATS server running?): "
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Start error %v, want it to start %q", err, want)
	}
}

// TestCleanCloseLogsNoWarning: stopping the bus logs no disconnect
// warning (the connection's own close reports a nil error).
func TestCleanCloseLogsNoWarning(t *testing.T) {
	var logs strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil))
	b, err := New(Options{Embedded: EmbeddedOptions{Listen: "127.0.0.1:0", StoreDir: t.TempDir()}}, logger, nil, WithEmbedded(embedded.Start))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("a clean close warned:\n%s", logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestBusKeepsNoReconnectBuffer: while the server is gone, a publish on
// the bus's connection fails at once. A buffered publish would reach the
// stream after reconnecting, ahead of the messages lost in flight, and
// the relay's retry would put those behind it (docs/CLUSTER.md "Failure
// cases").
func TestBusKeepsNoReconnectBuffer(t *testing.T) {
	srv := startServer(t)
	b, err := New(Options{URL: srv.url()}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if err := b.Conn().Publish("patrol.probe", []byte("up")); err != nil {
		t.Fatalf("publish while connected: %v", err)
	}
	srv.shutdown()
	testkit.Eventually(t, 10*time.Second, "the bus sees the server gone", func() bool { return !b.Conn().IsConnected() })
	err = b.Conn().Publish("patrol.probe", []byte("down"))
	if !errors.Is(err, nats.ErrReconnectBufExceeded) {
		t.Fatalf("publish while disconnected = %v, want %v", err, nats.ErrReconnectBufExceeded)
	}
}

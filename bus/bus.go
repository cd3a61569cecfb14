// Package bus is patrold's NATS transport: the client connection, the
// PATROL stream, the outbox relay, the durable consumers and the leader
// lease. The embedded server used when no URL is configured is package
// bus/embedded's; the composition root hands it in (WithEmbedded), so bus
// itself does not link nats-server. It moves
// subjects, ids and bytes; what they mean (subjects, CloudEvents envelope,
// payloads) is package contracts', and bus imports no domain package, so it
// never decides what is published.
package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/contracts"
)

// Connection defaults.
const (
	DefaultReconnectWait   = 2 * time.Second
	DefaultReconnectJitter = time.Second
	DefaultConnectTimeout  = 5 * time.Second
	DefaultPublishTimeout  = 10 * time.Second
	closeFlushTimeout      = 2 * time.Second
	clientName             = "patrold"
)

// Server is the in-process server a Bus runs when no URL is configured
// (a *server.Server of nats-server, started by package bus/embedded).
type Server interface {
	ClientURL() string
	InProcessConn() (net.Conn, error)
	Shutdown()
	WaitForShutdown()
}

// An Option changes how New builds a Bus.
type Option func(*Bus)

// WithEmbedded gives the Bus the starter of its embedded server (for an
// empty URL): start listens on listen and keeps its files under storeDir.
// Without it, an empty URL is refused at Start.
func WithEmbedded[S Server](start func(listen, storeDir string, logger *slog.Logger) (S, error)) Option {
	return func(b *Bus) {
		b.embed = func(listen, storeDir string, logger *slog.Logger) (Server, error) {
			srv, err := start(listen, storeDir, logger)
			if err != nil {
				return nil, err
			}
			return srv, nil
		}
	}
}

// AttachStream makes Start look the stream up instead of creating or
// updating it: only patrold serve manages the stream, and a worker's or
// notifier's user may not (docs/NATS.md, trust boundaries).
func AttachStream() Option { return func(b *Bus) { b.attach = true } }

// WithGuard gives the Bus the deployment key's guard (Guard hands it to
// what is built on the Bus).
func WithGuard(g *Guard) Option { return func(b *Bus) { b.guard = g } }

// Bus owns the NATS connection and, when no URL is configured, the embedded
// server. New validates; Start connects and ensures the stream; Close tears
// down in reverse order.
type Bus struct {
	opts Options
	log  *slog.Logger
	m    connMetrics

	// reconnectWait is DefaultReconnectWait; tests shorten it.
	reconnectWait time.Duration

	guard     *Guard
	attach    bool
	embed     func(listen, storeDir string, logger *slog.Logger) (Server, error)
	srv       Server
	nc        *nats.Conn
	js        jetstream.JetStream
	closeOnce sync.Once
	closeErr  error
}

// New validates opts (defaults fill zero values) and registers the
// connection metrics on reg (nil: not exported).
func New(opts Options, logger *slog.Logger, reg prometheus.Registerer, with ...Option) (*Bus, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	setStr(&opts.Source, contracts.DefaultSource())
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m, err := newConnMetrics(reg)
	if err != nil {
		return nil, err
	}
	b := &Bus{opts: opts, log: logger.With("component", "bus"), m: m, reconnectWait: DefaultReconnectWait}
	for _, o := range with {
		o(b)
	}
	return b, nil
}

// Start starts the embedded server (URL empty) or connects to the
// configured servers, then creates or updates the stream. An unreachable
// external server at start is an error; later outages are reconnected
// forever.
func (b *Bus) Start(ctx context.Context) error {
	if b.opts.URL == "" {
		if b.embed == nil {
			return errors.New("nats.url: empty, and this command runs no embedded server")
		}
		srv, err := b.embed(b.opts.Embedded.Listen, b.opts.Embedded.StoreDir, b.log)
		if err != nil {
			return err
		}
		b.srv = srv
		b.log.Info("embedded nats started", "url", b.srv.ClientURL(), "store_dir", b.opts.Embedded.StoreDir)
	}
	if err := b.connect(); err != nil {
		return errors.Join(err, b.Close())
	}
	ensure := b.ensureStream
	//mutate:bus-client-attaches-stream ./bus ^TestAttachStreamWaitsAndChangesNothing$
	if b.attach {
		ensure = b.awaitStream
	}
	if err := ensure(ctx); err != nil {
		return errors.Join(err, b.Close())
	}
	return nil
}

// Dial connects to the configured server and nothing more: no embedded
// server, no stream. It is for a command that only sends core NATS
// requests (`patrold trigger`), whose user may have no permission on the
// stream's API (docs/NATS.md#trigger-requests).
func (b *Bus) Dial() error {
	if b.opts.URL == "" {
		return errors.New("nats.url: empty: there is no server to send to")
	}
	if err := b.connect(); err != nil {
		return errors.Join(err, b.Close())
	}
	return nil
}

func (b *Bus) connect() error {
	copts, err := b.clientOptions()
	if err != nil {
		return err
	}
	url := b.opts.URL
	if b.srv != nil {
		url = b.srv.ClientURL()
		copts = append(copts, nats.InProcessServer(b.srv))
	}
	nc, err := nats.Connect(url, copts...)
	if err != nil {
		return fmt.Errorf("nats.url: connect to %s: %w", url, err)
	}
	b.m.connected.Set(1)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(DefaultPublishTimeout))
	if err != nil {
		nc.Close()
		return fmt.Errorf("jetstream: %w", err)
	}
	b.nc, b.js = nc, js
	return nil
}

func (b *Bus) clientOptions() ([]nats.Option, error) {
	o := b.opts
	copts := []nats.Option{
		nats.Name(clientName),
		nats.Timeout(DefaultConnectTimeout),
		nats.MaxReconnects(-1),
		// No reconnect buffer: a publish while disconnected fails at
		// once. A buffer would send those messages after reconnecting,
		// ahead of the ones lost in flight on the dead connection, and
		// the relay's retry would then put the lost ones after them: a
		// replica reads that as a gap it cannot close
		// (docs/CLUSTER.md "Failure cases").
		nats.ReconnectBufSize(-1),
		nats.ReconnectWait(b.reconnectWait),
		nats.ReconnectJitter(min(DefaultReconnectJitter, b.reconnectWait), min(DefaultReconnectJitter, b.reconnectWait)),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			b.m.connected.Set(0)
			// A nil error is the connection's own Close: a clean stop.
			if err != nil {
				b.log.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			b.m.connected.Set(1)
			b.m.reconnects.Inc()
			b.log.Info("nats reconnected", "url", nc.ConnectedUrlRedacted())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subj := ""
			if sub != nil {
				subj = sub.Subject
			}
			b.log.Warn("nats async error", "subject", subj, "err", err)
		}),
	}
	switch {
	case o.NkeyFile != "":
		nk, err := nats.NkeyOptionFromSeed(o.NkeyFile)
		if err != nil {
			return nil, fmt.Errorf("nats.nkey_file: %w", err)
		}
		copts = append(copts, nk)
	case o.CredentialsFile != "":
		if _, err := os.Stat(o.CredentialsFile); err != nil {
			return nil, fmt.Errorf("nats.credentials_file: %w", err)
		}
		copts = append(copts, nats.UserCredentials(o.CredentialsFile))
	case o.User != "":
		copts = append(copts, nats.UserInfo(o.User, o.Password))
	case o.TokenFile != "":
		raw, err := os.ReadFile(o.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("nats.token_file: %w", err)
		}
		tok := strings.TrimSpace(string(raw))
		if tok == "" {
			return nil, fmt.Errorf("nats.token_file: %s is empty", o.TokenFile)
		}
		copts = append(copts, nats.Token(tok))
	}
	if o.TLS.CAFile != "" {
		if _, err := os.Stat(o.TLS.CAFile); err != nil {
			return nil, fmt.Errorf("nats.tls.ca_file: %w", err)
		}
		copts = append(copts, nats.RootCAs(o.TLS.CAFile))
	}
	if o.TLS.CertFile != "" {
		for key, f := range map[string]string{"cert_file": o.TLS.CertFile, "key_file": o.TLS.KeyFile} {
			if _, err := os.Stat(f); err != nil {
				return nil, fmt.Errorf("nats.tls.%s: %w", key, err)
			}
		}
		copts = append(copts, nats.ClientCert(o.TLS.CertFile, o.TLS.KeyFile))
	}
	return copts, nil
}

// StreamConfig is the configuration of the stream capturing `<prefix>.>`.
func (o Options) StreamConfig() jetstream.StreamConfig {
	o = o.withDefaults()
	return jetstream.StreamConfig{
		Name:        o.Stream.Name,
		Description: "patrold events (CloudEvents 1.0, structured JSON)",
		Subjects:    []string{o.SubjectPrefix + ".>"},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		Storage:     jetstream.FileStorage,
		MaxAge:      o.Stream.MaxAge,
		MaxBytes:    o.Stream.MaxBytes,
		Replicas:    o.Stream.Replicas,
		Duplicates:  o.Stream.DuplicateWindow,
	}
}

// A stream create or update is retried after streamAttemptTimeout without
// an answer, until streamCreateWait has passed.
const (
	streamAttemptTimeout = 2 * time.Second
	streamCreateWait     = 30 * time.Second
)

// ensureStream creates or updates the stream. A clustered JetStream may
// leave all but one of concurrent creates of one stream unanswered (several
// instances starting together on a fresh cluster), so an attempt without
// an answer is retried: by then the stream exists.
func (b *Bus) ensureStream(ctx context.Context) error {
	cfg := b.opts.StreamConfig()
	ctx, cancel := context.WithTimeout(ctx, streamCreateWait)
	defer cancel()
	for {
		actx, acancel := context.WithTimeout(ctx, streamAttemptTimeout)
		_, err := b.js.CreateOrUpdateStream(actx, cfg)
		acancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || !(errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)) {
			return fmt.Errorf("nats.stream: create or update %s: %w", cfg.Name, err)
		}
		b.log.Warn("stream create or update unanswered; retrying", "stream", cfg.Name, "err", err)
	}
}

// EnsureStream creates the stream, or updates its configuration, as
// Start does: a cluster's lease holder creates a lost one again.
func (b *Bus) EnsureStream(ctx context.Context) error { return b.ensureStream(ctx) }

// awaitStream waits until the stream exists: a process that may not
// create it waits for patrold serve to, for up to streamCreateWait.
func (b *Bus) awaitStream(ctx context.Context) error {
	name := b.opts.Stream.Name
	ctx, cancel := context.WithTimeout(ctx, streamCreateWait)
	defer cancel()
	logged := false
	for {
		actx, acancel := context.WithTimeout(ctx, streamAttemptTimeout)
		_, err := b.js.Stream(actx, name)
		acancel()
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil || !errors.Is(err, jetstream.ErrStreamNotFound):
			return fmt.Errorf("nats.stream: look up %s: %w", name, err)
		case !logged:
			b.log.Warn("stream not found; waiting for patrold serve to create it", "stream", name)
			logged = true
		}
		select {
		case <-ctx.Done():
		case <-time.After(streamAttemptTimeout):
		}
	}
}

// Guard is the deployment key's guard (nil: messages are neither signed
// nor verified).
func (b *Bus) Guard() *Guard { return b.guard }

// Conn is the client connection; nil before Start.
func (b *Bus) Conn() *nats.Conn { return b.nc }

// JetStream is the JetStream context; nil before Start.
func (b *Bus) JetStream() jetstream.JetStream { return b.js }

// Prefix is the subject prefix.
func (b *Bus) Prefix() string { return b.opts.SubjectPrefix }

// Source is the CloudEvents source.
func (b *Bus) Source() string { return b.opts.Source }

// StreamName is the name of the events stream.
func (b *Bus) StreamName() string { return b.opts.Stream.Name }

// ClientURL is the embedded server's client URL, or the configured URL.
func (b *Bus) ClientURL() string {
	if b.srv != nil {
		return b.srv.ClientURL()
	}
	return b.opts.URL
}

// Close flushes (when connected) and closes the connection, then shuts the
// embedded server down. It is idempotent.
func (b *Bus) Close() error {
	b.closeOnce.Do(func() {
		var errs []error
		if b.nc != nil {
			// Disconnected, there is nothing to flush to; what matters is
			// acknowledged by JetStream or still in the outbox.
			if !b.nc.IsConnected() {
				b.log.Warn("closing the NATS connection while disconnected")
			} else if err := b.nc.FlushTimeout(closeFlushTimeout); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
				errs = append(errs, fmt.Errorf("flush nats: %w", err))
			}
			b.nc.Close()
			b.m.connected.Set(0)
		}
		if b.srv != nil {
			b.srv.Shutdown()
			b.srv.WaitForShutdown()
		}
		b.closeErr = errors.Join(errs...)
	})
	return b.closeErr
}

// SubjectHistory reports how many messages the events stream holds on
// subject (a wildcard is allowed) and the data of the last one (nil when
// there is none).
func (b *Bus) SubjectHistory(ctx context.Context, subject string) (uint64, []byte, error) {
	if b.js == nil {
		return 0, nil, errors.New("nats not started")
	}
	s, err := b.js.Stream(ctx, b.opts.Stream.Name)
	if err != nil {
		return 0, nil, err
	}
	last, err := s.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return 0, nil, err
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n, last.Data, nil
}

// Package embedded runs patrold's in-process NATS server: JetStream on,
// files under a store directory, no signals and no monitoring port. Only
// the composition root (an empty nats.url) and tests link it, so the
// client transport (package bus) does not link nats-server.
package embedded

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// ReadyTimeout bounds the wait for the embedded server to accept
// connections.
const ReadyTimeout = 10 * time.Second

const embeddedServerName = "patrold"

// ServerOptions are the nats-server options of the embedded server:
// JetStream on, files under storeDir, listening on listen ("host:port"; port
// 0 picks a free port). Tests use it to run the same server kind.
func ServerOptions(listen, storeDir string) (*server.Options, error) {
	host, portStr, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("nats.embedded.listen: %q is not host:port: %w", listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("nats.embedded.listen: port %q must be 0..65535", portStr)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	if storeDir == "" {
		return nil, errors.New("nats.embedded.store_dir: required for the embedded server (the daemon sets <data_dir>/nats)")
	}
	return &server.Options{
		ServerName: embeddedServerName,
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   storeDir,
		NoSigs:     true,
		// The daemon's HTTP API serves metrics; no NATS monitoring port.
		HTTPPort: 0,
	}, nil
}

// StartServer starts an in-process nats-server with the given options and
// waits until it accepts connections. logger may be nil.
//
// A fixed port that is taken fails at once, naming the key: nats-server
// itself would only time out after ReadyTimeout.
func StartServer(opts *server.Options, logger *slog.Logger) (*server.Server, error) {
	r, err := NewRefusals(nil)
	if err != nil {
		return nil, err
	}
	return startServer(opts, logger, r)
}

// startServer is StartServer counting the client requests the server
// refuses in r.
func startServer(opts *server.Options, logger *slog.Logger, r *Refusals) (*server.Server, error) {
	if opts.Port > 0 {
		addr := net.JoinHostPort(opts.Host, strconv.Itoa(opts.Port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("nats.embedded.listen: %s cannot be bound (is another patrold or NATS server running?): %w", addr, err)
		}
		if err := ln.Close(); err != nil {
			return nil, fmt.Errorf("nats.embedded.listen: %w", err)
		}
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	if logger != nil {
		srv.SetLoggerV2(serverLogger{logger.With("component", "nats_server"), r}, false, false, false)
	}
	srv.Start()
	if !srv.ReadyForConnections(ReadyTimeout) {
		srv.Shutdown()
		return nil, fmt.Errorf("embedded nats: not ready to accept connections on %s:%d within %s", opts.Host, opts.Port, ReadyTimeout)
	}
	return srv, nil
}

// Start starts the embedded server of the `nats.embedded` section:
// listening on listen, its files under storeDir. It is what the
// composition root passes to bus.WithEmbedded.
func Start(listen, storeDir string, logger *slog.Logger) (*server.Server, error) {
	opts, err := ServerOptions(listen, storeDir)
	if err != nil {
		return nil, err
	}
	return StartServer(opts, logger)
}

// serverLogger adapts slog to nats-server's Logger. Notices are logged at
// debug level: the server is chatty at start and patrold logs its own
// summary. A client's refused request is counted and logged once at WARN.
type serverLogger struct {
	l       *slog.Logger
	refused *Refusals
}

func (s serverLogger) Noticef(f string, v ...any) { s.l.Debug(fmt.Sprintf(f, v...)) }
func (s serverLogger) Warnf(f string, v ...any)   { s.l.Warn(fmt.Sprintf(f, v...)) }
func (s serverLogger) Fatalf(f string, v ...any)  { s.l.Error(fmt.Sprintf(f, v...)) }
func (s serverLogger) Errorf(f string, v ...any) {
	line := fmt.Sprintf(f, v...)
	//mutate:nats-refusal-not-error ./bus/embedded ^TestRefusedRequestsAreWarnedOnceAndCounted$
	if kind, key, ok := refusal(line); ok {
		s.refused.note(s.l, kind, key, line)
		return
	}
	s.l.Error(line)
}
func (s serverLogger) Debugf(f string, v ...any) { s.l.Debug(fmt.Sprintf(f, v...)) }
func (s serverLogger) Tracef(f string, v ...any) {}

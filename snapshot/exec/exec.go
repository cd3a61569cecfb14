// Package exec is the snapshot source that runs an operator-supplied
// collector program and reads a snapshot document from its standard output.
//
// The program is started without a shell, in its own process group, with an
// environment built only from an allow-list of the daemon's variables. When
// the timeout expires the whole process group is killed. A non-zero exit, a
// timeout, oversized output or a document rejected by snapshot.Decode is an
// error: nothing of such a run is used.
package exec

import (
	"context"
	"errors"
	"fmt"
	osexec "os/exec"
	"strings"
	"time"

	"github.com/patrold/patrold/snapshot"
)

// Defaults for Options.
const (
	DefaultTimeout        = 30 * time.Second
	DefaultMaxOutputBytes = 64 << 20 // 64 MiB
	// DefaultSourceName is written into a document that names no source.
	DefaultSourceName = "exec"
	// stderrLimit bounds the standard error kept for the error message.
	stderrLimit = 4 << 10
	// waitDelay bounds how long Wait waits for pipes held open by
	// descendants after the process exits or is killed.
	waitDelay = 2 * time.Second
)

// Options configure the exec source (YAML section source.exec).
type Options struct {
	// Command is the argv of the collector; Command[0] is looked up in PATH
	// when it contains no slash. No shell is involved.
	Command []string `koanf:"command" yaml:"command" json:"command"`
	// Timeout bounds one collection; the process group is killed when it
	// expires. Zero means DefaultTimeout.
	Timeout time.Duration `koanf:"timeout" yaml:"timeout" json:"timeout"`
	// Env names the variables of the daemon's environment passed to the
	// collector. Nothing else is passed, not even PATH.
	Env []string `koanf:"env" yaml:"env" json:"env"`
	// MaxOutputBytes bounds standard output. Zero means DefaultMaxOutputBytes.
	MaxOutputBytes int64 `koanf:"max_output_bytes" yaml:"max_output_bytes" json:"max_output_bytes"`
}

// Validate reports every problem, each naming its key under source.exec.
// It does not touch the file system; New checks that the command exists.
func (o Options) Validate() error {
	var errs []error
	if len(o.Command) == 0 {
		errs = append(errs, errors.New("source.exec.command: required (argv of the collector, e.g. [\"/usr/local/bin/collect\"])"))
	} else if strings.TrimSpace(o.Command[0]) == "" {
		errs = append(errs, errors.New("source.exec.command[0]: empty program name"))
	}
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("source.exec.timeout: must not be negative, got %s", o.Timeout))
	}
	if o.MaxOutputBytes < 0 {
		errs = append(errs, fmt.Errorf("source.exec.max_output_bytes: must not be negative, got %d", o.MaxOutputBytes))
	}
	for i, name := range o.Env {
		if name == "" || strings.ContainsAny(name, "= \t\n\x00") {
			errs = append(errs, fmt.Errorf("source.exec.env[%d]: %q is not a variable name", i, name))
		}
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxOutputBytes == 0 {
		o.MaxOutputBytes = DefaultMaxOutputBytes
	}
	return o
}

// Source runs the collector on every Collect. It is safe for concurrent
// use; each call starts its own process.
type Source struct {
	opts Options
	path string // resolved Command[0]
}

var _ snapshot.KeptSource = (*Source)(nil)

// New validates opts and resolves the program.
func New(opts Options) (*Source, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	path, err := osexec.LookPath(opts.Command[0])
	if err != nil {
		return nil, fmt.Errorf("source.exec.command[0]: %w", err)
	}
	return &Source{opts: opts.withDefaults(), path: path}, nil
}

// Collect runs the collector and decodes its output; a document without
// taken_at is stamped with the current time.
func (s *Source) Collect(ctx context.Context) (*snapshot.Snapshot, []snapshot.Problem, error) {
	return s.CollectAt(ctx, time.Now().UTC())
}

// CollectKept is Collect, handing each batch of kept resources to kept as
// the output is decoded.
func (s *Source) CollectKept(ctx context.Context, kept func(snapshot.Handed)) (*snapshot.Snapshot, []snapshot.Problem, error) {
	now := time.Now().UTC()
	// Until the document gives its taken_at, a batch is taken now, as the
	// snapshot will be if the document never does.
	return s.collect(ctx, now, snapshot.DecodeOptions{Kept: func(h snapshot.Handed) {
		if h.TakenAt.IsZero() {
			h.TakenAt = now
		}
		kept(h)
	}})
}

// CollectAt is Collect with the collection time given.
func (s *Source) CollectAt(ctx context.Context, now time.Time) (*snapshot.Snapshot, []snapshot.Problem, error) {
	return s.collect(ctx, now, snapshot.DecodeOptions{})
}

func (s *Source) collect(ctx context.Context, now time.Time, opts snapshot.DecodeOptions) (*snapshot.Snapshot, []snapshot.Problem, error) {
	out, err := s.run(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("collect: %w", err)
	}
	snap, problems, err := parse(out, now, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("collect: command %q: %w", s.opts.Command[0], err)
	}
	return snap, problems, nil
}

// Parse decodes collector output. A document without taken_at gets now and
// one without source gets DefaultSourceName.
func Parse(out []byte, now time.Time) (*snapshot.Snapshot, []snapshot.Problem, error) {
	return parse(out, now, snapshot.DecodeOptions{})
}

func parse(out []byte, now time.Time, opts snapshot.DecodeOptions) (*snapshot.Snapshot, []snapshot.Problem, error) {
	if len(strings.TrimSpace(string(out))) == 0 {
		return nil, nil, errors.New("empty output (want a snapshot document on standard output)")
	}
	snap, problems, err := snapshot.Decode(out, opts)
	if err != nil {
		return nil, nil, err
	}
	if snap.TakenAt.IsZero() {
		snap.TakenAt = now
	}
	if snap.Source == "" {
		snap.Source = DefaultSourceName
	}
	return snap, problems, nil
}

// DefaultOptions is the source.exec section's defaults.
func DefaultOptions() Options {
	return Options{Timeout: DefaultTimeout, MaxOutputBytes: DefaultMaxOutputBytes}
}

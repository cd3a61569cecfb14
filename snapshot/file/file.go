// Package file is the snapshot source that re-reads a JSON document from a
// file on every run.
package file

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/patrold/patrold/snapshot"
)

// DefaultMaxBytes bounds a snapshot file (512 MiB): a document past it is
// refused before it is read, so a runaway collector cannot exhaust memory.
const DefaultMaxBytes int64 = 512 << 20

// Options configure the file source (YAML section source.file).
type Options struct {
	Path string `koanf:"path" json:"path" yaml:"path"`
	// MaxBytes bounds the file's size (0: DefaultMaxBytes); it applies to
	// `patrold run --snapshot` too.
	MaxBytes int64 `koanf:"max_bytes" json:"max_bytes" yaml:"max_bytes"`
}

// Validate names the missing key.
func (o Options) Validate() error {
	if o.Path == "" {
		return errors.New("source.file.path: required when source.kind is file")
	}
	return nil
}

// ErrTooLarge: the snapshot file is over the size limit.
var ErrTooLarge = errors.New("snapshot file over the size limit")

// Source reads a snapshot document from a file.
type Source struct {
	path string
	max  int64
}

var _ snapshot.Source = (*Source)(nil)

// New builds a file source.
func New(o Options) (*Source, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &Source{path: o.Path, max: o.MaxBytes}, nil
}

// Collect reads and decodes the file.
func (s *Source) Collect(ctx context.Context) (*snapshot.Snapshot, []snapshot.Problem, error) {
	return LoadLimited(s.path, s.max)
}

// Load reads and decodes a snapshot file of at most DefaultMaxBytes.
func Load(path string) (*snapshot.Snapshot, []snapshot.Problem, error) {
	return LoadLimited(path, DefaultMaxBytes)
}

// LoadLimited reads and decodes a snapshot file of at most max bytes (0:
// DefaultMaxBytes). A larger file is refused with ErrTooLarge, naming the
// key, before it is read.
func LoadLimited(path string, max int64) (*snapshot.Snapshot, []snapshot.Problem, error) {
	if max <= 0 {
		max = DefaultMaxBytes
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read snapshot: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		return nil, nil, fmt.Errorf("%s is %d bytes, over source.file.max_bytes (%d): %w", path, fi.Size(), max, ErrTooLarge)
	}
	// The file may grow while it is read: read one byte past the limit.
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read snapshot: %w", err)
	}
	if int64(len(data)) > max {
		return nil, nil, fmt.Errorf("%s grew past source.file.max_bytes (%d) while read: %w", path, max, ErrTooLarge)
	}
	snap, probs, err := snapshot.Decode(data, snapshot.DecodeOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return snap, probs, nil
}

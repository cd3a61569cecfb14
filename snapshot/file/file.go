// Package file is the snapshot source that re-reads a JSON document from a
// file on every run.
package file

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/patrold/patrold/snapshot"
)

// Options configure the file source (YAML section source.file).
type Options struct {
	Path string `koanf:"path" json:"path" yaml:"path"`
}

// Validate names the missing key.
func (o Options) Validate() error {
	if o.Path == "" {
		return errors.New("source.file.path: required when source.kind is file")
	}
	return nil
}

// Source reads a snapshot document from a file.
type Source struct{ path string }

var _ snapshot.Source = (*Source)(nil)

// New builds a file source.
func New(o Options) (*Source, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &Source{path: o.Path}, nil
}

// Collect reads and decodes the file.
func (s *Source) Collect(ctx context.Context) (*snapshot.Snapshot, []snapshot.Problem, error) {
	return Load(s.path)
}

// Load reads and decodes a snapshot file.
func Load(path string) (*snapshot.Snapshot, []snapshot.Problem, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read snapshot: %w", err)
	}
	snap, probs, err := snapshot.Decode(data, snapshot.DecodeOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return snap, probs, nil
}

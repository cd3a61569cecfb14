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

// Load reads and decodes a snapshot file as a stream: the file is never
// held in memory whole, only the resources kept.
func Load(path string) (*snapshot.Snapshot, []snapshot.Problem, error) {
	snap, probs, err := Read(path, snapshot.DecodeOptions{})
	if err != nil {
		var de *snapshot.DocumentError
		if !errors.As(err, &de) {
			return nil, nil, fmt.Errorf("read snapshot: %w", err)
		}
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return snap, probs, nil
}

// Read decodes a snapshot file as a stream with opts. Its errors are the
// reading error or the *snapshot.DocumentError as they are. A file that is
// not valid JSON is read again whole and judged by snapshot.Decode, so the
// rejection says what it always said.
func Read(path string, opts snapshot.DecodeOptions) (*snapshot.Snapshot, []snapshot.Problem, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	snap, probs, err := snapshot.DecodeReader(f, opts)
	var de *snapshot.DocumentError
	if errors.As(err, &de) && de.Field == "" {
		data, rerr := os.ReadFile(path)
		if rerr != nil {
			return nil, nil, rerr
		}
		return snapshot.Decode(data, opts)
	}
	return snap, probs, err
}

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
// refused, so a runaway collector cannot exhaust memory.
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

var _ snapshot.KeptSource = (*Source)(nil)

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

// CollectKept is Collect, handing each batch of kept resources to kept as
// the file is decoded.
func (s *Source) CollectKept(ctx context.Context, kept func(snapshot.Handed)) (*snapshot.Snapshot, []snapshot.Problem, error) {
	return load(s.path, snapshot.DecodeOptions{Kept: kept}, s.max)
}

// Load reads and decodes a snapshot file of at most DefaultMaxBytes.
func Load(path string) (*snapshot.Snapshot, []snapshot.Problem, error) {
	return LoadLimited(path, DefaultMaxBytes)
}

// LoadLimited reads and decodes a snapshot file of at most max bytes (0:
// DefaultMaxBytes) as a stream: the file is never held in memory whole,
// only the resources kept. A larger file is refused with ErrTooLarge,
// naming the key.
func LoadLimited(path string, max int64) (*snapshot.Snapshot, []snapshot.Problem, error) {
	return load(path, snapshot.DecodeOptions{}, max)
}

func load(path string, opts snapshot.DecodeOptions, max int64) (*snapshot.Snapshot, []snapshot.Problem, error) {
	snap, probs, err := ReadLimited(path, opts, max)
	if err != nil {
		var de *snapshot.DocumentError
		if errors.Is(err, ErrTooLarge) || !errors.As(err, &de) {
			return nil, nil, fmt.Errorf("read snapshot: %w", err)
		}
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return snap, probs, nil
}

// Read is ReadLimited with DefaultMaxBytes.
func Read(path string, opts snapshot.DecodeOptions) (*snapshot.Snapshot, []snapshot.Problem, error) {
	return ReadLimited(path, opts, DefaultMaxBytes)
}

// ReadLimited decodes a snapshot file of at most max bytes (0:
// DefaultMaxBytes) as a stream with opts. Its errors are ErrTooLarge, the
// reading error or the *snapshot.DocumentError as they are. A file that is
// not valid JSON is read again whole and judged by snapshot.Decode, so the
// rejection says what it always said.
func ReadLimited(path string, opts snapshot.DecodeOptions, max int64) (*snapshot.Snapshot, []snapshot.Problem, error) {
	if max <= 0 {
		max = DefaultMaxBytes
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		return nil, nil, fmt.Errorf("%s is %d bytes, over source.file.max_bytes (%d): %w", path, fi.Size(), max, ErrTooLarge)
	}
	lr := &limitedReader{r: f, left: max}
	snap, probs, err := snapshot.DecodeReader(lr, opts)
	if lr.over {
		return nil, nil, fmt.Errorf("%s grew past source.file.max_bytes (%d) while read: %w", path, max, ErrTooLarge)
	}
	var de *snapshot.DocumentError
	if errors.As(err, &de) && de.Field == "" {
		data, rerr := os.ReadFile(path)
		if rerr != nil {
			return nil, nil, rerr
		}
		if int64(len(data)) > max {
			return nil, nil, fmt.Errorf("%s grew past source.file.max_bytes (%d) while read: %w", path, max, ErrTooLarge)
		}
		opts.Kept = nil // the stream's batches are the consumer's to discard
		return snapshot.Decode(data, opts)
	}
	return snap, probs, err
}

// limitedReader reads at most left bytes and notes an attempt to read
// past them (a file that grew while it was read).
type limitedReader struct {
	r    io.Reader
	left int64
	over bool
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		var one [1]byte
		if n, _ := l.r.Read(one[:]); n > 0 {
			l.over = true
			return 0, ErrTooLarge
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// Stat is the file's: snapshot.DecodeReader sizes the resource slice from
// it, so a large fleet's slice is not grown (and copied) over and over.
func (l *limitedReader) Stat() (os.FileInfo, error) {
	f, ok := l.r.(interface{ Stat() (os.FileInfo, error) })
	if !ok {
		return nil, errors.New("not a file")
	}
	return f.Stat()
}

// DefaultOptions is the source.file section's defaults.
func DefaultOptions() Options { return Options{MaxBytes: DefaultMaxBytes} }

// ValidateSection reports every problem of the source.file section: the
// path when the file is the source (selected), the size bound whatever
// the kind (`patrold run --snapshot` applies it).
func (o Options) ValidateSection(selected bool) error {
	var errs []error
	if selected {
		errs = append(errs, o.Validate())
	}
	if o.MaxBytes <= 0 {
		errs = append(errs, errors.New("source.file.max_bytes: must be positive"))
	}
	return errors.Join(errs...)
}

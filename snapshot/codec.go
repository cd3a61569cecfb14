package snapshot

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// DocumentError rejects a snapshot document as a whole. Nothing of such a
// document is used.
type DocumentError struct {
	Field   string // JSON path of the offending field, "" for the document
	Problem string
}

func (e *DocumentError) Error() string {
	if e.Field == "" {
		return "invalid snapshot: " + e.Problem
	}
	return fmt.Sprintf("invalid snapshot: %s: %s", e.Field, e.Problem)
}

// ErrInvalidDocument matches every *DocumentError with errors.Is.
var ErrInvalidDocument = errors.New("invalid snapshot document")

// Is makes errors.Is(err, ErrInvalidDocument) true.
func (e *DocumentError) Is(target error) bool { return target == ErrInvalidDocument }

// Problem names one invalid resource that was dropped, or (with Warning set)
// one oddity that --strict reports without dropping anything.
type Problem struct {
	ID      string `json:"id,omitempty"`
	Index   int    `json:"index"`
	Field   string `json:"field"`
	Problem string `json:"problem"`
	Warning bool   `json:"warning,omitempty"`
	// Source names the source of several (config sources[].name) whose
	// collection the problem is from; "" with one source.
	Source string `json:"source,omitempty"`
	// Gap, when set, says the problem left a check unevaluated: its data
	// was refused, not served, or empty where it cannot be.
	Gap *Gap `json:"gap,omitempty"`
}

// Gap is a check a source could not evaluate (docs/PATROL_ARCHITECTURE.md).
type Gap struct {
	// Check names what went unevaluated: an endpoint family of the source.
	Check string `json:"check"`
	// Keys are the signal keys that rest on the check.
	Keys []string `json:"keys,omitempty"`
	// Endpoint is the request: "GET /nodes/pve1/apt/update".
	Endpoint string `json:"endpoint"`
	// Privilege is what the API token lacks, or "" when it is not that.
	Privilege string `json:"privilege,omitempty"`
	// Status is the HTTP status of the answer: 403, 501, or 200 for an
	// empty answer.
	Status int `json:"status"`
	// Unlisted says the check is the resource list itself: what it hid
	// is absent from the snapshot, so no finding resolves by absence.
	Unlisted bool `json:"unlisted,omitempty"`
}

// SourceLevel reports whether the problem is about the source as a whole
// (Index < 0, such as a failed query) rather than one resource.
func (p Problem) SourceLevel() bool { return p.Index < 0 }

// FieldCollect is the Field of a problem that says one source of several
// failed to collect at all (SourceFailed).
const FieldCollect = "collect"

// SourceFailed reports whether the problem says that the source it names,
// one of several, collected nothing: none of what it covers was seen.
func (p Problem) SourceFailed() bool {
	return p.Index < 0 && p.Field == FieldCollect && p.Source != ""
}

func (p Problem) String() string {
	who := p.ID
	if who == "" {
		who = "resources[" + strconv.Itoa(p.Index) + "]"
	}
	return fmt.Sprintf("%s: %s: %s", who, p.Field, p.Problem)
}

// DecodeOptions tune Decode.
type DecodeOptions struct {
	// Strict reports unknown fields and unrecognised enum values as
	// warnings. It never changes which resources are kept.
	Strict bool
	// Kept, when set, is called on the decoding goroutine with each batch
	// of resources as they are kept (KeptBatch resources at a time, and
	// the rest at the end of an array), in document order (see Handed).
	// Decoding never writes to a batch's elements afterwards, so a
	// consumer may read them while decoding goes on; the snapshot's
	// resources may be copies of them (the slice grows). The decoded
	// snapshot need not hold the batches at all: duplicate ids drop some,
	// a later taken_at replaces the time, and a rejected document keeps
	// nothing. A consumer asks Snapshot.HeldFrom before it uses what it
	// made of them.
	Kept func(Handed)
	// KeptBatch is how many resources Kept is given at a time; 0 is
	// DefaultKeptBatch.
	KeptBatch int
}

// Handed is one batch of resources a decoding handed over
// (DecodeOptions.Kept).
type Handed struct {
	Resources []Resource // no room to append; never written afterwards
	// At is the position of the first of Resources among those kept from
	// its array: 0 starts an array (a later "resources" array replaces an
	// earlier one).
	At int
	// TakenAt is the document's taken_at as read so far: zero when none
	// has been read, or it is not a valid time.
	TakenAt time.Time
	// Decoding names the decoding that handed the batch over, as
	// Snapshot.HeldFrom names the one whose resources a snapshot holds.
	Decoding uint64
}

// decodings numbers the decodings that hand batches over (Handed.Decoding;
// 0 is none).
var decodings atomic.Uint64

// DefaultKeptBatch is how many resources DecodeOptions.Kept is given at a
// time by default: enough to make a hand-over cheap, few enough that the
// consumer starts early.
const DefaultKeptBatch = 1024

// Decode parses and validates a snapshot document. A *DocumentError rejects
// the whole document; otherwise invalid resources are dropped and returned
// as problems (warnings, in strict mode, are returned too but drop nothing).
//
// Decoding is one streaming pass (see DecodeReader): a jsontext walk of
// the document, each resource read into its wire type and then checked.
func Decode(data []byte, opts DecodeOptions) (*Snapshot, []Problem, error) {
	return decode(bytes.NewBuffer(data), opts, sizing{count: countHint(data)})
}

// DecodeReader is Decode over a stream: the document is never held whole,
// only the resources kept. A document that is not valid JSON is rejected
// with the tokenizer's description of the first error; a read error is
// returned as it is (not a *DocumentError).
func DecodeReader(r io.Reader, opts DecodeOptions) (*Snapshot, []Problem, error) {
	var size sizing
	if f, ok := r.(interface{ Stat() (os.FileInfo, error) }); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			// Sized from the file (sizing), so the slice is neither grown
			// (and copied) over and over nor left half empty.
			size.bytes = fi.Size()
		}
	}
	return decode(r, opts, size)
}

// decode is decodeStream with a syntax error as a *DocumentError.
func decode(r io.Reader, opts DecodeOptions, size sizing) (*Snapshot, []Problem, error) {
	snap, probs, err := decodeStream(r, opts, size)
	var se *jsontext.SyntacticError
	if errors.As(err, &se) {
		return nil, nil, &DocumentError{Problem: fmt.Sprintf("not valid JSON at byte %d: %v", se.ByteOffset, se.Err)}
	}
	return snap, probs, err
}

// sizing is what the capacity of the resource slice is taken from: a
// count of the resources (Decode counts them in the document), or else
// the document's size in bytes (a file). With a size, the first
// sizeSample resources are decoded into a slice of that many; the slice
// is then sized for the rest of the document at the bytes a resource
// those took (sizeFor). Zero: the slice grows as append grows it.
type sizing struct {
	count int
	bytes int64
}

// sizeSample is how many resources a document of known size decodes
// before its resource slice is sized: no more than one batch handed over
// (DefaultKeptBatch), so the default stream hands every batch from the
// slice the snapshot keeps.
const sizeSample = DefaultKeptBatch

// first is the capacity to decode the first resources into.
func (z sizing) first() int {
	if z.count > 0 {
		return z.count
	}
	if z.bytes > 0 {
		return int(min(sizeSample, z.bytes/256+1))
	}
	return 0
}

// sizeFor is the capacity of a resource slice whose first n resources
// took used bytes, with left bytes of the document after them: the rest
// at the same bytes a resource, and a sixteenth more for resources a
// little larger later on. Never more than 1<<24 resources, never less
// than n+1.
func sizeFor(n int, used, left int64) int {
	if used <= 0 || left <= 0 {
		return n + 1
	}
	rest := left * int64(n) / used
	return int(min(int64(n)+rest+rest/16+1, max(1<<24, int64(n)+1)))
}

// countHint guesses how many resources data holds (for the capacity of
// the resource slice): one "kind" key each.
func countHint(data []byte) int {
	return min(bytes.Count(data, []byte(`"kind"`)), len(data)/16)
}

// tokenizer options: what encoding/json v1 accepts (duplicate names, invalid
// UTF-8 in strings, which v1 replaces with U+FFFD).
var tokenOpts = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// Document keys, compared the way v1 matches struct fields: exactly, else
// case-folded.
const (
	docVersion = iota + 1
	docTakenAt
	docSource
	docResources
)

var docKeys = []string{"", "version", "taken_at", "source", "resources"}

// decodeStream walks the document with a token decoder. It keeps the rules
// of the v1 decoder it replaces:
//   - the first type error in document order rejects the document (after the
//     whole document is known to be valid JSON);
//   - a later duplicate key wins;
//   - the checks run in the same order.
//
// Each resource element is read by a resourceDecoder.
func decodeStream(r io.Reader, opts DecodeOptions, size sizing) (*Snapshot, []Problem, error) {
	d := jsontext.NewDecoder(r, tokenOpts...)
	var decoding uint64
	var kept func([]Resource, int, time.Time)
	if opts.Kept != nil {
		decoding = decodings.Add(1)
		kept = func(rs []Resource, at int, takenAt time.Time) {
			opts.Kept(Handed{Resources: rs, At: at, TakenAt: takenAt, Decoding: decoding})
		}
	}
	var (
		typeErr   *DocumentError // the first type error, in document order
		version   []byte
		takenAt   *string
		source    string
		haveRes   bool
		resources []Resource
		problems  []Problem
		unknown   *string // first unknown document key (strict)
	)
	rd := newResourceDecoder(opts.Strict)
	typeError := func(field, want string, k jsontext.Kind) {
		if typeErr == nil {
			typeErr = &DocumentError{Field: field, Problem: "must be " + want + ", got " + kindName(k)}
		}
	}
	k, err := peek(d)
	if err != nil {
		return nil, nil, err
	}
	switch k {
	case '{':
		if _, err := d.ReadToken(); err != nil {
			return nil, nil, err
		}
		for {
			k, err := peek(d)
			if err != nil {
				return nil, nil, err
			}
			if k == '}' {
				break
			}
			tok, err := d.ReadToken()
			if err != nil {
				return nil, nil, err
			}
			name := tok.String()
			key := matchKey(name, docKeys)
			if k, err = peek(d); err != nil {
				return nil, nil, err
			}
			if typeErr != nil {
				// v1 reports the first type error; only syntax can change
				// the outcome now.
				if err := d.SkipValue(); err != nil {
					return nil, nil, err
				}
				continue
			}
			switch key {
			case docVersion:
				v, err := d.ReadValue()
				if err != nil {
					return nil, nil, err
				}
				version = nil
				if k != 'n' {
					version = bytes.Clone(v)
				}
			case docTakenAt, docSource:
				if k != '"' && k != 'n' {
					typeError(docKeys[key], "a string", k)
					if err := d.SkipValue(); err != nil {
						return nil, nil, err
					}
					continue
				}
				tok, err := d.ReadToken()
				if err != nil {
					return nil, nil, err
				}
				switch {
				case k == 'n' && key == docTakenAt:
					takenAt = nil
				case k == 'n': // null leaves a string as it was
				case key == docTakenAt:
					s := tok.String()
					takenAt = &s
				default:
					source = tok.String()
				}
			case docResources:
				switch k {
				case 'n':
					if _, err := d.ReadToken(); err != nil {
						return nil, nil, err
					}
					haveRes, resources, problems = false, nil, nil
				case '[':
					// A later "resources" replaces an earlier one.
					haveRes, resources, problems = true, make([]Resource, 0, size.first()), nil
					var at time.Time
					if takenAt != nil {
						at, _ = time.Parse(time.RFC3339, *takenAt)
					}
					if resources, problems, err = decodeResources(d, rd, resources, kept, cmp.Or(opts.KeptBatch, DefaultKeptBatch), at, size.bytes); err != nil {
						return nil, nil, err
					}
				default:
					typeError("resources", "an array", k)
					if err := d.SkipValue(); err != nil {
						return nil, nil, err
					}
				}
			default:
				if opts.Strict && unknown == nil {
					unknown = &name
				}
				if err := d.SkipValue(); err != nil {
					return nil, nil, err
				}
			}
		}
		if _, err := d.ReadToken(); err != nil {
			return nil, nil, err
		}
	case 'n':
		if _, err := d.ReadToken(); err != nil {
			return nil, nil, err
		}
	default:
		typeError("", "an object", k)
		if err := d.SkipValue(); err != nil {
			return nil, nil, err
		}
	}
	if _, err := d.ReadToken(); err != io.EOF {
		if err == nil {
			err = &jsontext.SyntacticError{ByteOffset: d.InputOffset(), Err: errors.New("invalid data after top-level value")}
		}
		return nil, nil, err
	}
	if typeErr != nil {
		return nil, nil, typeErr
	}
	if version == nil {
		return nil, nil, &DocumentError{Field: "version", Problem: "required"}
	}
	// A number written as an integer, as v1 reads an int.
	v, err := strconv.Atoi(string(version))
	if err != nil || v != Version {
		return nil, nil, &DocumentError{Field: "version", Problem: fmt.Sprintf("must be %d, got %s", Version, string(version))}
	}
	if !haveRes {
		return nil, nil, &DocumentError{Field: "resources", Problem: "required array is missing"}
	}
	snap := &Snapshot{Version: v, Source: source, Resources: resources}
	if takenAt != nil {
		t, err := time.Parse(time.RFC3339, *takenAt)
		if err != nil {
			return nil, nil, &DocumentError{Field: "taken_at", Problem: "not an RFC 3339 time: " + strconv.Quote(*takenAt)}
		}
		snap.TakenAt = t
	}
	if unknown != nil {
		problems = append([]Problem{{ID: "(document)", Index: 0, Field: strings.Trim(strconv.Quote(*unknown), `"`),
			Problem: "unknown field (ignored)", Warning: true}}, problems...)
	}
	n := len(snap.Resources)
	snap.Resources, problems = dropDuplicates(snap.Resources, problems)
	// The resources are the last array's, every one handed to Kept (each
	// array ends with a hand-over), unless a duplicate dropped some; an
	// array that kept none handed none over, and holds no batch.
	if kept != nil && n > 0 && len(snap.Resources) == n {
		snap.heldFrom = decoding
	}
	return snap, problems, nil
}

// decodeResources reads the elements of the resources array (the '[' is
// next) through its ']', handing each batch of kept resources to kept
// (when set).
func decodeResources(d *jsontext.Decoder, rd *resourceDecoder, resources []Resource, kept func([]Resource, int, time.Time), batch int, takenAt time.Time, size int64) ([]Resource, []Problem, error) {
	if _, err := d.ReadToken(); err != nil {
		return nil, nil, err
	}
	start := d.InputOffset()
	var problems []Problem
	handed := len(resources) // resources before this many went to kept
	for i := 0; ; i++ {
		k, err := peek(d)
		if err != nil {
			return nil, nil, err
		}
		if k == ']' {
			break
		}
		if kept != nil && len(resources)-handed == batch {
			kept(resources[handed:len(resources):len(resources)], handed, takenAt)
			handed = len(resources)
		}
		r, probs, err := rd.decode(d, i)
		if err != nil {
			return nil, nil, err
		}
		problems = append(problems, probs...)
		if r == nil {
			continue
		}
		resources = append(resources, *r)
		if size > 0 && len(resources) == sizeSample {
			// Batches handed over before keep the slice they came from.
			at := d.InputOffset()
			resources = append(make([]Resource, 0, sizeFor(len(resources), at-start, size-at)), resources...)
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, nil, err
	}
	if kept != nil && len(resources) > handed {
		kept(resources[handed:len(resources):len(resources)], handed, takenAt)
	}
	return resources, problems, nil
}

// peek returns the kind of the next token, or the error reading it.
func peek(d *jsontext.Decoder) (jsontext.Kind, error) {
	if k := d.PeekKind(); k != 0 {
		return k, nil
	}
	_, err := d.ReadToken()
	if err == io.EOF {
		err = &jsontext.SyntacticError{ByteOffset: d.InputOffset(), Err: io.ErrUnexpectedEOF}
	}
	return 0, err
}

// kindName is how v1 names the JSON value in a type error.
func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "string"
	case '0':
		return "number"
	case 't', 'f':
		return "bool"
	case '[':
		return "array"
	default:
		return "object"
	}
}

// matchKey returns the index in keys of name, matched like encoding/json
// v1 matches a struct field: exactly, else under Unicode case folding; 0
// when none.
func matchKey(name string, keys []string) int {
	for i := 1; i < len(keys); i++ {
		if name == keys[i] {
			return i
		}
	}
	folded := foldName(name)
	for i := 1; i < len(keys); i++ {
		if folded == foldName(keys[i]) {
			return i
		}
	}
	return 0
}

// foldName folds a name the way v1 does: ASCII upper case, and each other
// rune to the smallest rune of its case-folding orbit.
func foldName(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || ('a' <= c && c <= 'z') {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out = append(out, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		out = utf8.AppendRune(out, foldRune(r))
		i += n
	}
	return string(out)
}

func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}

// Encode renders a snapshot as an indented JSON document.
func Encode(s *Snapshot) ([]byte, error) {
	if s.Resources == nil {
		c := *s
		c.Resources = []Resource{}
		s = &c
	}
	return json.MarshalIndent(s, "", " ")
}

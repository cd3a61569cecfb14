package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"iter"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/patrold/patrold/contracts"
)

// Metric is one named value of a resource's metrics.
type Metric struct {
	Name  string
	Value float64
}

// Metrics are the metric values of a resource: a JSON object of numbers in
// the snapshot document (docs/SOURCES.md), held as a slice sorted by name
// with one entry per name. A fleet's resources carry a handful of metrics
// each, so a slice costs a fraction of a map (one small array, often
// shared with its neighbours' in one allocation) and a lookup scans a few
// entries. Build one with Set or MetricsOf; a slice literal is read
// correctly too (unsorted, or with a repeated name, the last entry wins),
// as the JSON encoding and All sort it.
//
// Like a map, Metrics are a reference: a copy of a resource shares them.
// Set changes an existing entry in place and never grows the shared array
// (a new name copies it), so do not Set metrics of a decoded resource
// others may hold; copy them with slices.Clone first.
type Metrics []Metric

// MetricsOf returns m as Metrics (nil for a nil map, empty for an empty
// one, as the map encodes to null or {}).
func MetricsOf(m map[string]float64) Metrics {
	if m == nil {
		return nil
	}
	out := make(Metrics, 0, len(m))
	for k, v := range m {
		out = append(out, Metric{Name: k, Value: v})
	}
	slices.SortFunc(out, func(a, b Metric) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Get returns the value named name.
func (m Metrics) Get(name string) (float64, bool) {
	for i := len(m) - 1; i >= 0; i-- {
		if m[i].Name == name {
			return m[i].Value, true
		}
	}
	return 0, false
}

// Has reports whether a value is named name.
func (m Metrics) Has(name string) bool {
	_, ok := m.Get(name)
	return ok
}

// Len is the number of values.
func (m Metrics) Len() int { return len(m.normal()) }

// Set sets the value named name, keeping the names sorted.
func (m *Metrics) Set(name string, v float64) {
	s := *m
	for i := len(s) - 1; i >= 0; i-- {
		if s[i].Name == name {
			s[i].Value = v
			return
		}
	}
	i, _ := slices.BinarySearchFunc(s, name, func(e Metric, n string) int { return strings.Compare(e.Name, n) })
	if !s.sorted() {
		i = len(s)
	}
	// A full slice: never writes past len into an array another slice
	// (a neighbour's metrics in the decoder's shared array) may own.
	*m = slices.Insert(s[:len(s):len(s)], i, Metric{Name: name, Value: v})
}

// All yields the values in name order (for a repeated name, the last).
func (m Metrics) All() iter.Seq2[string, float64] {
	return func(yield func(string, float64) bool) {
		for _, e := range m.normal() {
			if !yield(e.Name, e.Value) {
				return
			}
		}
	}
}

// Map returns the values as a map (nil for nil Metrics).
func (m Metrics) Map() map[string]float64 {
	if m == nil {
		return nil
	}
	out := make(map[string]float64, len(m))
	for _, e := range m {
		out[e.Name] = e.Value
	}
	return out
}

// sorted reports whether the names are strictly increasing (so each name
// is there once).
func (m Metrics) sorted() bool {
	for i := 1; i < len(m); i++ {
		if m[i-1].Name >= m[i].Name {
			return false
		}
	}
	return true
}

// normal returns m sorted by name with one entry per name (the last of a
// repeated name): m itself when it already is.
func (m Metrics) normal() Metrics {
	if m.sorted() {
		return m
	}
	out := slices.Clone(m)
	// A stable sort keeps repeated names in order; the last of each run
	// is the one kept.
	slices.SortStableFunc(out, func(a, b Metric) int { return strings.Compare(a.Name, b.Name) })
	kept := out[:0]
	for i := range out {
		if i+1 < len(out) && out[i+1].Name == out[i].Name {
			continue
		}
		kept = append(kept, out[i])
	}
	return kept
}

// errNotFinite is the encoding error of a NaN or infinite value (JSON has
// no such number).
var errNotFinite = errors.New("unsupported value: not a finite number")

// MarshalJSON encodes the values as a JSON object with sorted names,
// exactly as encoding/json encodes a map[string]float64 (null for nil).
func (m Metrics) MarshalJSON() ([]byte, error) {
	if m == nil {
		return []byte("null"), nil
	}
	n := m.normal()
	out := make([]byte, 0, 2+len(n)*32)
	out = append(out, '{')
	for i, e := range n {
		if i > 0 {
			out = append(out, ',')
		}
		var err error
		if out, err = appendName(out, e.Name); err != nil {
			return nil, err
		}
		out = append(out, ':')
		if out, err = appendNumber(out, e.Value); err != nil {
			return nil, err
		}
	}
	return append(out, '}'), nil
}

// appendName appends a name as a JSON string. A plain name (printable
// ASCII, nothing to escape) is copied; any other is encoded by
// encoding/json without HTML escaping, which the enclosing encoder applies
// (or not) to a marshaler's output as it does to map keys.
func appendName(out []byte, name string) ([]byte, error) {
	plain := true
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < ' ' || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		out = append(out, '"')
		out = append(out, name...)
		return append(out, '"'), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(name); err != nil {
		return nil, err
	}
	return append(out, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

// appendNumber appends v the way encoding/json writes a float64
// (contracts.AppendJSONFloat), refusing what encoding/json refuses.
func appendNumber(out []byte, v float64) ([]byte, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil, errNotFinite
	}
	return contracts.AppendJSONFloat(out, v), nil
}

// UnmarshalJSON decodes a JSON object of numbers as encoding/json decodes
// a map[string]float64: null clears the values, an object adds its values
// to those already there (a repeated name: the last wins), and anything
// else is the same *json.UnmarshalTypeError.
func (m *Metrics) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		*m = nil
		return nil
	}
	var v map[string]float64
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	if *m == nil {
		*m = MetricsOf(v)
		return nil
	}
	for _, e := range MetricsOf(v) {
		m.Set(e.Name, e.Value)
	}
	return nil
}

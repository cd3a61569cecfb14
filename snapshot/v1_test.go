package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// This file is the encoding/json v1 reference the decoder is held to
// (FuzzDecodeMatchesV1): v1's reflection decoder reads the document, and
// check judges each resource, so only the reading differs.

type v1Document struct {
	Version   *json.RawMessage  `json:"version"`
	TakenAt   *string           `json:"taken_at"`
	Source    string            `json:"source"`
	Resources []json.RawMessage `json:"resources"`
}

// v1Resource is the Resource itself (so it follows a new field), with
// the metrics a map of pointers (a null value is kept, to be refused).
type v1Resource struct {
	Resource
	Metrics map[string]*float64 `json:"metrics"`
}

// decodeV1 decodes the whole document with encoding/json v1.
func decodeV1(data []byte, opts DecodeOptions) (*Snapshot, []Problem, error) {
	var doc v1Document
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, nil, v1DocError(err)
	}
	if doc.Version == nil {
		return nil, nil, &DocumentError{Field: "version", Problem: "required"}
	}
	var version int
	if err := json.Unmarshal(*doc.Version, &version); err != nil || version != Version {
		return nil, nil, &DocumentError{Field: "version", Problem: fmt.Sprintf("must be %d, got %s", Version, string(*doc.Version))}
	}
	if doc.Resources == nil {
		return nil, nil, &DocumentError{Field: "resources", Problem: "required array is missing"}
	}
	snap := &Snapshot{Version: version, Source: doc.Source, Resources: make([]Resource, 0, len(doc.Resources))}
	if doc.TakenAt != nil {
		t, err := time.Parse(time.RFC3339, *doc.TakenAt)
		if err != nil {
			return nil, nil, &DocumentError{Field: "taken_at", Problem: "not an RFC 3339 time: " + strconv.Quote(*doc.TakenAt)}
		}
		snap.TakenAt = t
	}
	var problems []Problem
	if opts.Strict {
		problems = append(problems, v1UnknownFields(data, -1, "", v1Document{})...)
	}
	for i, raw := range doc.Resources {
		r, probs := v1DecodeResource(raw, i, opts.Strict)
		problems = append(problems, probs...)
		if r != nil {
			snap.Resources = append(snap.Resources, *r)
		}
	}
	snap.Resources, problems = dropDuplicates(snap.Resources, problems)
	return snap, problems, nil
}

func v1DocError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &DocumentError{Field: te.Field, Problem: "must be " + jsonType(te.Type) + ", got " + te.Value}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &DocumentError{Problem: fmt.Sprintf("not valid JSON at byte %d: %v", se.Offset, err)}
	}
	return &DocumentError{Problem: "not valid JSON: " + err.Error()}
}

// v1DecodeResource decodes one resource element with encoding/json v1.
func v1DecodeResource(raw json.RawMessage, i int, strict bool) (*Resource, []Problem) {
	var w v1Resource
	if err := json.Unmarshal(raw, &w); err != nil {
		p := Problem{ID: ProblemID(v1PeekID(raw)), Index: i, Field: "", Problem: err.Error()}
		var te *json.UnmarshalTypeError
		var perr *time.ParseError
		switch {
		case errors.As(err, &te):
			p.Field, p.Problem = te.Field, "must be "+jsonType(te.Type)+", got "+te.Value
			if te.Field == "metrics" {
				p.Field = v1BadMetric(raw)
			}
		case errors.As(err, &perr):
			p.Field, p.Problem = "backup", "not an RFC 3339 time"
		}
		if p.Field == "" {
			p.Field = "(resource)"
		}
		return nil, []Problem{p}
	}
	var warnings []Problem
	if strict {
		warnings = v1UnknownFields(raw, i, CanonicalID(w.ID), v1Resource{})
	}
	r := &w.Resource
	if w.Metrics != nil {
		r.Metrics = Metrics{}
		for _, name := range v1SortedKeys(w.Metrics) {
			v := math.NaN() // null: check refuses it
			if p := w.Metrics[name]; p != nil {
				v = *p
			}
			r.Metrics = append(r.Metrics, Metric{Name: name, Value: v})
		}
		if len(r.Metrics) == 0 {
			r.Metrics = nil
		}
	}
	if field, problem := check(r); problem != "" {
		return nil, append(warnings, Problem{ID: ProblemID(CanonicalID(w.ID)), Index: i, Field: field, Problem: problem})
	}
	if strict {
		warnings = append(warnings, enumWarnings(r, i)...)
	}
	return r, warnings
}

// v1UnknownFields reports the first unknown field of an object (strict mode).
func v1UnknownFields[T any](raw []byte, i int, id string, _ T) []Problem {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var v T
	err := dec.Decode(&v)
	if err == nil || !strings.HasPrefix(err.Error(), "json: unknown field ") {
		return nil
	}
	name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
	p := Problem{ID: ProblemID(id), Index: i, Field: name, Problem: "unknown field (ignored)", Warning: true}
	if i < 0 {
		p.Index = 0
		p.ID = "(document)"
	}
	return []Problem{p}
}

func v1PeekID(raw []byte) string {
	var p struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(raw, &p) == nil {
		if s, ok := p.ID.(string); ok {
			return CanonicalID(s)
		}
	}
	return ""
}

// v1BadMetric names the first metric (in key order) that is not a number.
func v1BadMetric(raw []byte) string {
	var p struct {
		Metrics map[string]any `json:"metrics"`
	}
	if json.Unmarshal(raw, &p) == nil {
		for _, k := range v1SortedKeys(p.Metrics) {
			if _, ok := p.Metrics[k].(float64); !ok && p.Metrics[k] != nil {
				return "metrics." + k
			}
		}
	}
	return "metrics"
}

func v1SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

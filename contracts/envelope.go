package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// CloudEvents 1.0 structured-mode constants.
const (
	SpecVersion     = "1.0"
	ContentTypeJSON = "application/json"
	// ContentTypeEvent is the media type of a structured CloudEvent.
	ContentTypeEvent = "application/cloudevents+json"
	sourcePrefix     = "patrold/"
	maxExtensionName = 20
)

// Event is a CloudEvents 1.0 structured JSON envelope. Subject is the
// resource id and is omitted when the event concerns no resource.
type Event struct {
	SpecVersion     string    `json:"specversion"`
	ID              string    `json:"id"`
	Source          string    `json:"source"`
	Type            string    `json:"type"`
	Time            time.Time `json:"time"`
	Subject         string    `json:"subject,omitempty"`
	DataContentType string    `json:"datacontenttype"`
	// DataRef is the CloudEvents dataref extension: where the data can
	// be seen (a finding event's web page); omitted when there is none.
	DataRef string          `json:"dataref,omitempty"`
	Data    json.RawMessage `json:"data"`
}

// DefaultSource returns "patrold/<hostname>", or "patrold/unknown".
func DefaultSource() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "unknown"
	}
	return sourcePrefix + h
}

// NewEvent wraps an outbox row in the envelope.
func NewEvent(row OutboxEvent, source string) Event {
	return Event{
		SpecVersion:     SpecVersion,
		ID:              row.ID,
		Source:          source,
		Type:            row.Type,
		Time:            row.Time.UTC(),
		Subject:         row.ResourceID,
		DataContentType: ContentTypeJSON,
		Data:            row.Data,
	}
}

// Validate checks the required attributes, naming the first bad one.
func (e *Event) Validate() error {
	switch {
	case e.SpecVersion != SpecVersion:
		return fmt.Errorf("specversion: must be %q, got %q", SpecVersion, e.SpecVersion)
	case e.ID == "":
		return errors.New("id: required")
	case e.Source == "":
		return errors.New("source: required")
	case e.Type == "":
		return errors.New("type: required")
	case e.Time.IsZero():
		return errors.New("time: required")
	case e.DataContentType != ContentTypeJSON:
		return fmt.Errorf("datacontenttype: must be %q, got %q", ContentTypeJSON, e.DataContentType)
	case len(bytes.TrimSpace(e.Data)) == 0:
		return errors.New("data: required")
	}
	return nil
}

// envelopeAttrs are the attributes DecodeEvent knows; any other top-level
// key must be a well-formed extension attribute name.
var envelopeAttrs = map[string]bool{
	"specversion": true, "id": true, "source": true, "type": true, "time": true,
	"subject": true, "datacontenttype": true, "data": true, "dataschema": true, "dataref": true,
}

// DecodeEvent decodes and validates a structured envelope. Extension
// attributes are allowed when their names follow the CloudEvents rule
// (lower-case letters and digits, at most 20 characters); data must be JSON.
func DecodeEvent(raw []byte) (*Event, error) {
	var attrs map[string]json.RawMessage
	if err := decodeOne(raw, &attrs); err != nil {
		return nil, fmt.Errorf("envelope: %w", err)
	}
	if attrs == nil {
		return nil, errors.New("envelope: must be a JSON object")
	}
	for k := range attrs {
		if !envelopeAttrs[k] && !validExtensionName(k) {
			return nil, fmt.Errorf("%s: not a CloudEvents attribute or extension name", truncate(k, 40))
		}
	}
	var e Event
	for _, f := range []struct {
		key string
		dst any
	}{
		{"specversion", &e.SpecVersion}, {"id", &e.ID}, {"source", &e.Source},
		{"type", &e.Type}, {"time", &e.Time}, {"subject", &e.Subject},
		{"datacontenttype", &e.DataContentType},
	} {
		v, ok := attrs[f.key]
		if !ok {
			continue
		}
		if err := json.Unmarshal(v, f.dst); err != nil {
			return nil, fmt.Errorf("%s: %v", f.key, cleanJSONError(err))
		}
	}
	e.Data = attrs["data"]
	if err := e.Validate(); err != nil {
		return nil, err
	}
	return &e, nil
}

// isEnvelope reports whether raw starts with a JSON object carrying
// "specversion" (what follows it is DecodeEvent's to judge).
func isEnvelope(raw []byte) bool {
	var probe struct {
		SpecVersion *json.RawMessage `json:"specversion"`
	}
	return json.NewDecoder(bytes.NewReader(raw)).Decode(&probe) == nil && probe.SpecVersion != nil
}

func validExtensionName(k string) bool {
	if k == "" || len(k) > maxExtensionName {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// decodeOne decodes exactly one JSON value with unknown fields refused when
// dst is a struct, and nothing but whitespace after it.
func decodeOne(raw []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return cleanJSONError(err)
	}
	if len(bytes.TrimSpace(raw[dec.InputOffset():])) > 0 {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func cleanJSONError(err error) error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Errorf("not valid JSON at offset %d: %v", syn.Offset, syn)
	}
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q...", s[:n])
}

// AppendEnvelope appends the JSON of NewEvent(row, source), with row.Data
// spliced in verbatim.
//
// The envelope is written around row.Data as stored: the data was encoded
// once, when the row was written (the findings store writes compact JSON
// and refuses anything else), and is not decoded or re-encoded here. The
// result is byte for byte what encoding/json makes of NewEvent(row, source).
func AppendEnvelope(b []byte, row OutboxEvent, source string) ([]byte, error) {
	return AppendEnvelopeRef(b, row, source, "")
}

// AppendEnvelopeRef is AppendEnvelope with the dataref attribute ("":
// none): byte for byte what encoding/json makes of NewEvent(row, source)
// with DataRef set.
func AppendEnvelopeRef(b []byte, row OutboxEvent, source, dataref string) ([]byte, error) {
	b = append(b, `{"specversion":"`+SpecVersion+`","id":`...)
	b = AppendJSONString(b, row.ID)
	b = append(b, `,"source":`...)
	b = AppendJSONString(b, source)
	b = append(b, `,"type":`...)
	b = AppendJSONString(b, row.Type)
	b = append(b, `,"time":`...)
	t, err := row.Time.UTC().MarshalJSON()
	if err != nil {
		return nil, err
	}
	b = append(b, t...)
	if row.ResourceID != "" {
		b = append(b, `,"subject":`...)
		b = AppendJSONString(b, row.ResourceID)
	}
	b = append(b, `,"datacontenttype":"`+ContentTypeJSON+`"`...)
	if dataref != "" {
		b = append(b, `,"dataref":`...)
		b = AppendJSONString(b, dataref)
	}
	b = append(b, `,"data":`...)
	b = append(b, row.Data...)
	return append(b, '}'), nil
}

// FindingID returns the finding id of a finding event's row (its
// data.finding.id); false for any other event or data without one.
func FindingID(row OutboxEvent) (string, bool) {
	if !strings.HasPrefix(row.Type, TypeFindingPrefix) {
		return "", false
	}
	var d struct {
		Finding struct {
			ID string `json:"id"`
		} `json:"finding"`
	}
	if json.Unmarshal(row.Data, &d) != nil || d.Finding.ID == "" {
		return "", false
	}
	return d.Finding.ID, true
}

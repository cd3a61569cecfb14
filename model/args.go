package model

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// NormalizeArguments turns the argument text a model produced into valid
// JSON. Empty becomes {}, and valid JSON is kept (compacted). Anything else
// is kept as a JSON string: it survives recording and fails the tool's
// schema check (an object is required) instead of the whole turn.
func NormalizeArguments(raw []byte) json.RawMessage {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return json.RawMessage(`{}`)
	}
	var buf bytes.Buffer
	if json.Valid(trimmed) && json.Compact(&buf, trimmed) == nil {
		return json.RawMessage(buf.Bytes())
	}
	quoted, _ := json.Marshal(string(raw))
	return json.RawMessage(quoted)
}

// ToolCallID returns id, or a stable substitute for servers that omit it.
func ToolCallID(id string, turnIndex int) string {
	if id != "" {
		return id
	}
	return fmt.Sprintf("call_%d", turnIndex)
}

// Secret holds a credential in memory. It formats as [redacted] with every
// fmt verb and in JSON, so it cannot leak through a log line or a dump.
type Secret string

// Reveal returns the credential for the one place that sends it.
func (s Secret) Reveal() string { return string(s) }

// String implements fmt.Stringer.
func (s Secret) String() string { return redactedMarker }

// GoString implements fmt.GoStringer.
func (s Secret) GoString() string { return redactedMarker }

// Format implements fmt.Formatter for every verb.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(redactedMarker)) }

// MarshalJSON implements json.Marshaler.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(redactedMarker) }

// MarshalText implements encoding.TextMarshaler (YAML, slog text).
func (s Secret) MarshalText() ([]byte, error) { return []byte(redactedMarker), nil }

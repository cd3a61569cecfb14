package prompt

import (
	"encoding/json"
	"fmt"
)

// MaxWireRunes caps a Text decoded from JSON or read from the database.
// It is above every cap patrold files text under, so a stored Text comes
// back unchanged (SafeText is stable).
const MaxWireRunes = 1 << 16

// Text is outside text (from a source or a model) made safe by SafeText.
// It is the type of every field that carries such text into the store,
// events, the API and the CLI:
//   - its one field is unexported, so a raw string does not compile where
//     a Text is wanted;
//   - the only constructors are Safe, SafeName, SafeNames and
//     PlainMemo.Remembered, and each is SafeText;
//   - on the wire and in the database it is a plain string (the store
//     writes String()), and decoding or scanning one applies SafeText
//     again.
//
// The zero Text is the empty text.
type Text struct{ s string }

// Safe is s made safe by SafeText, capped at maxRunes runes.
func Safe(s string, maxRunes int) Text { return Text{SafeText(s, maxRunes)} }

// SafeName is s made safe as a name (Name: capped at MaxNameRunes).
func SafeName(s string) Text { return Text{Name(s)} }

// SafeNames applies SafeName to each of names; nil stays nil.
func SafeNames(names []string) []Text {
	if names == nil {
		return nil
	}
	out := make([]Text, len(names))
	for i, n := range names {
		out[i] = SafeName(n)
	}
	return out
}

// String is the safe text.
func (t Text) String() string { return t.s }

// Empty reports the empty text.
func (t Text) Empty() bool { return t.s == "" }

// Strings returns the texts as strings; nil stays nil.
func Strings(ts []Text) []string {
	if ts == nil {
		return nil
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.s
	}
	return out
}

// MarshalJSON writes the text as a JSON string.
func (t Text) MarshalJSON() ([]byte, error) { return json.Marshal(t.s) }

// UnmarshalJSON reads a JSON string and makes it safe.
func (t *Text) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("text: want a JSON string: %w", err)
	}
	*t = Safe(s, MaxWireRunes)
	return nil
}

// Scan reads a database string (or NULL, the empty text) and makes it safe.
func (t *Text) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*t = Text{}
	case string:
		*t = Safe(v, MaxWireRunes)
	case []byte:
		*t = Safe(string(v), MaxWireRunes)
	default:
		return fmt.Errorf("text: cannot scan %T into a text", src)
	}
	return nil
}

package config

// Secret is a string that never prints: String, YAML and JSON render it as
// "<hidden>" (or "" when empty).
type Secret string

const hidden = "<hidden>"

func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return hidden
}

// Reveal returns the secret value; call it only where the value is used.
func (s Secret) Reveal() string { return string(s) }

// MarshalYAML hides the value.
func (s Secret) MarshalYAML() (any, error) { return s.String(), nil }

// MarshalText hides the value (JSON and text encoders).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

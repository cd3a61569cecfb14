// Package logging owns the log section of the configuration and builds
// the process logger from it.
package logging

import (
	"io"
	"log/slog"

	"github.com/patrold/patrold/internal/confcheck"
)

// Config is the log section.
type Config struct {
	Level  string `koanf:"level" yaml:"level"`   // debug | info | warn | error
	Format string `koanf:"format" yaml:"format"` // text | json
}

// DefaultConfig is the log section's defaults.
func DefaultConfig() Config { return Config{Level: "info", Format: "text"} }

// Validate reports every problem, each naming its key under log.
func (c Config) Validate() error {
	var p confcheck.Problems
	p.OneOf("log.level", c.Level, "debug", "info", "warn", "error")
	p.OneOf("log.format", c.Format, "text", "json")
	return p.Error()
}

// New builds a logger writing to w at c's level in c's format.
func New(c Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level))
	ho := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, ho))
	}
	return slog.New(slog.NewTextHandler(w, ho))
}

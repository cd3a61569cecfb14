// Package confcheck collects the problems of a configuration section.
// Each problem is one "key: message" line; the section's Validate returns
// them as one error, a line each, which config splits back into lines.
package confcheck

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Problems is the list of one section's problems, in the order found.
type Problems struct{ list []string }

// Add records that key has the problem msg.
func (p *Problems) Add(key, msg string) { p.list = append(p.list, key+": "+msg) }

// Addf records a problem of key with a formatted message.
func (p *Problems) Addf(key, format string, args ...any) { p.Add(key, fmt.Sprintf(format, args...)) }

// Line records a problem that already names its key.
func (p *Problems) Line(line string) { p.list = append(p.list, line) }

// Err records every line of err (nil records nothing).
func (p *Problems) Err(err error) {
	if err == nil {
		return
	}
	p.list = append(p.list, strings.Split(err.Error(), "\n")...)
}

// OneOf records a problem unless v is one of allowed.
func (p *Problems) OneOf(key, v string, allowed ...string) {
	for _, a := range allowed {
		if v == a {
			return
		}
	}
	p.Addf(key, "%q is not one of %s", v, strings.Join(allowed, ", "))
}

// Positive records a problem unless d is above zero.
func (p *Problems) Positive(key string, d time.Duration) {
	if d <= 0 {
		p.Addf(key, "%s must be positive", d)
	}
}

// NonNegative records a problem if d is below zero.
func (p *Problems) NonNegative(key string, d time.Duration) {
	if d < 0 {
		p.Addf(key, "%s must not be negative", d)
	}
}

// AtLeastOne records a problem unless n is at least 1.
func (p *Problems) AtLeastOne(key string, n int) {
	if n < 1 {
		p.Add(key, "must be at least 1")
	}
}

// List is every problem recorded, in order.
func (p *Problems) List() []string { return p.list }

// Error is every problem as one error, a line each (nil when none).
func (p *Problems) Error() error {
	if len(p.list) == 0 {
		return nil
	}
	return errors.New(strings.Join(p.list, "\n"))
}

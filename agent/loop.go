package agent

import (
	"bytes"
	"encoding/json"
)

// LoopThreshold is how many identical calls (same tool, same canonical
// arguments) are allowed since the last write; the next one is refused with
// LOOP_DETECTED and the following turn is text-only.
const LoopThreshold = 3

// LookFirstMaxRefusals bounds how often an operator question asked before
// any real tool was tried is refused with LOOK_FIRST; after that many
// refusals the question goes through.
const LookFirstMaxRefusals = 2

// loopDetector counts admitted calls by tool and canonical arguments. The
// count restarts at every infrastructure write, so the verifying read right
// after a write is never taken for a repeat.
type loopDetector struct {
	counts map[string]int
}

func newLoopDetector() *loopDetector { return &loopDetector{counts: map[string]int{}} }

// key returns the identity of a call: tool name and canonical arguments.
func loopKey(tool string, args json.RawMessage) string {
	return tool + "\x00" + string(canonicalArgs(args))
}

// repeated reports whether admitting one more call with this key would
// exceed the threshold.
func (d *loopDetector) repeated(key string) bool { return d.counts[key] >= LoopThreshold }

func (d *loopDetector) admit(key string) { d.counts[key]++ }

func (d *loopDetector) reset() { clear(d.counts) }

// canonicalArgs re-encodes JSON with object keys sorted and insignificant
// whitespace removed; numbers keep their literal form. Invalid JSON is
// returned compacted if possible, else as is.
func canonicalArgs(args json.RawMessage) []byte {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return []byte("{}")
	}
	var v any
	if err := decodeJSON(trimmed, &v); err != nil {
		var buf bytes.Buffer
		if json.Compact(&buf, trimmed) == nil {
			return buf.Bytes()
		}
		return trimmed
	}
	out, err := json.Marshal(v) // maps marshal with sorted keys
	if err != nil {
		return trimmed
	}
	return out
}

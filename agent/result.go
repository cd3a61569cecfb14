package agent

import (
	"encoding/json"
	"unicode/utf8"
)

// MaxToolResultChars bounds the JSON text of one tool result sent to the
// model, in characters.
const MaxToolResultChars = 16000

// resultEnvelope is what the model receives for every call.
type resultEnvelope struct {
	OK            bool       `json:"ok"`
	Result        any        `json:"result,omitempty"`
	Error         *errorBody `json:"error,omitempty"`
	Truncated     bool       `json:"truncated,omitempty"`
	OriginalChars int        `json:"original_chars,omitempty"`
}

type errorBody struct {
	Code    Code           `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// encodeOK renders a successful result, truncated to MaxToolResultChars.
func encodeOK(result any) string {
	b, err := json.Marshal(resultEnvelope{OK: true, Result: result})
	if err != nil {
		return encodeError(&ToolError{Code: CodeExecutionFailed, Message: "the tool result could not be encoded as JSON"})
	}
	if utf8.RuneCount(b) <= MaxToolResultChars {
		return string(b)
	}
	inner, _ := json.Marshal(result)
	return truncated(string(inner))
}

// truncated renders a result that was too long: the longest start of its
// JSON text that fits, as a string, flagged truncated.
func truncated(text string) string {
	runes := []rune(text)
	render := func(n int) []byte {
		b, _ := json.Marshal(resultEnvelope{OK: true, Result: string(runes[:n]), Truncated: true, OriginalChars: len(runes)})
		return b
	}
	lo, hi := 0, len(runes) // render(lo) fits; find the largest n that does
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if utf8.RuneCount(render(mid)) <= MaxToolResultChars {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return string(render(lo))
}

// encodeError renders a refusal or failure.
func encodeError(te *ToolError) string {
	body := &errorBody{Code: te.Code, Message: te.Message, Details: te.Details}
	b, err := json.Marshal(resultEnvelope{OK: false, Error: body})
	if err != nil {
		body.Details = nil
		b, _ = json.Marshal(resultEnvelope{OK: false, Error: body})
	}
	if utf8.RuneCount(b) <= MaxToolResultChars {
		return string(b)
	}
	msg := []rune(te.Message)
	if len(msg) > MaxToolResultChars/2 {
		msg = msg[:MaxToolResultChars/2]
	}
	b, _ = json.Marshal(resultEnvelope{OK: false, Error: &errorBody{Code: te.Code, Message: string(msg)}, Truncated: true})
	return string(b)
}

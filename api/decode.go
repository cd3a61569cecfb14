package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// readBody reads a request body already bounded by http.MaxBytesReader.
func readBody(r *http.Request, limit int64) ([]byte, *Error) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		if e := bodyTooLarge(err, limit); e != nil {
			return nil, e
		}
		return nil, invalid("body", "could not be read: %v", err)
	}
	return data, nil
}

// bodyTooLarge maps http.MaxBytesError to 413 invalid_request, else nil.
func bodyTooLarge(err error, limit int64) *Error {
	var mbe *http.MaxBytesError
	if !errors.As(err, &mbe) {
		return nil
	}
	e := invalid("body", "larger than the limit of %d bytes", mbe.Limit).with("limit_bytes", mbe.Limit)
	e.Status = http.StatusRequestEntityTooLarge
	return e
}

// isEmptyBody reports whether a body holds nothing but whitespace.
func isEmptyBody(data []byte) bool { return len(bytes.TrimSpace(data)) == 0 }

// strictDecode decodes exactly one JSON value into v: unknown fields are
// errors naming the field (with prefix, e.g. "matchers."), and anything
// after the value is rejected.
func strictDecode(data []byte, v any, prefix string) *Error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err, prefix)
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid(bodyField(prefix), "unexpected data after the JSON value")
	}
	return nil
}

func bodyField(prefix string) string {
	if prefix == "" {
		return "body"
	}
	return strings.TrimSuffix(prefix, ".")
}

func decodeError(err error, prefix string) *Error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return invalid(bodyField(prefix), "not valid JSON at offset %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		field := bodyField(prefix)
		if typ.Field != "" {
			field = prefix + typ.Field
		}
		return invalid(field, "expected %s, got JSON %s", typ.Type, typ.Value)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return invalid(bodyField(prefix), "truncated JSON")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if name, err := strconv.Unquote(name); err == nil && name != "" {
			return invalid(prefix+name, "unknown field")
		}
		return invalid(bodyField(prefix), "unknown field %s", name)
	}
	return invalid(bodyField(prefix), "%v", err)
}

// decodeDuration parses a Go duration string ("4h", "90m") for field.
func decodeDuration(field, s string) (time.Duration, *Error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, invalid(field, "%q is not a duration such as \"4h\" or \"90m\"", s)
	}
	return d, nil
}

// decodeTime parses an RFC 3339 time for field.
func decodeTime(field, s string) (time.Time, *Error) {
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(s))
	if err != nil {
		return time.Time{}, invalid(field, "%q is not an RFC 3339 time such as \"2026-11-29T10:00:00Z\"", s)
	}
	return t, nil
}

// decodeEmpty accepts an empty body or an empty JSON object.
func decodeEmpty(data []byte) *Error {
	if isEmptyBody(data) {
		return nil
	}
	var none struct{}
	if e := strictDecode(data, &none, ""); e != nil {
		return e
	}
	return nil
}

// fieldOf returns the field a "field: problem" validation message names.
func fieldOf(msg string) string {
	if f, _, ok := strings.Cut(msg, ":"); ok && f != "" && !strings.ContainsAny(f, " \"") {
		return f
	}
	return "body"
}

// validationError turns a joined validation error ("field: problem" per
// line) into invalid_request naming the first field and listing them all.
func validationError(err error) *Error {
	lines := strings.Split(err.Error(), "\n")
	fields := make([]string, 0, len(lines))
	for _, l := range lines {
		fields = append(fields, fieldOf(l))
	}
	e := newError(CodeInvalidRequest, "%s", strings.Join(lines, "; ")).with("field", fields[0])
	if len(lines) > 1 {
		e.with("fields", fields)
	}
	return e
}

// LimitBodies bounds every request body passing through next to max
// bytes, before any token is checked:
//   - a declared Content-Length above max is answered 413 at once, the
//     body unread and the connection closed;
//   - any other body is cut off at max (reads past it fail with
//     http.MaxBytesError, which the handlers answer 413).
func LimitBodies(next http.Handler, max int64) http.Handler {
	if max <= 0 {
		max = DefaultMaxBodyBytes
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			w.Header().Set("Connection", "close")
			e := invalid("body", "Content-Length %d is larger than the limit of %d bytes", r.ContentLength, max).with("limit_bytes", max)
			e.Status = http.StatusRequestEntityTooLarge
			writeJSON(w, e.Status, e)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, max)
		next.ServeHTTP(w, r)
	})
}

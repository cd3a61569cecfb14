package findings

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// Page bounds: every list the API and the CLI serve is read a page at a
// time, at most MaxPageLimit rows, DefaultPageLimit when no limit is given.
const (
	DefaultPageLimit = 100
	MaxPageLimit     = 1000
)

// Page selects one page of a list: at most Limit rows (0: DefaultPageLimit)
// after Cursor ("" : from the start), a value a previous page returned.
type Page struct {
	Limit  int
	Cursor string
}

// ListStates are the accepted values of ListFilter.Status ("" is active).
var ListStates = []string{"active", "resolved", "all"}

// Validate checks a finding list filter, naming the field. The CLI and
// the API both call it, so a bad value fails the same way either way.
func (f ListFilter) Validate() error {
	ok := f.Status == ""
	for _, s := range ListStates {
		ok = ok || f.Status == s
	}
	if !ok {
		return &InputError{Field: "state", Problem: fmt.Sprintf("%q is not one of %s (empty: active)", f.Status, strings.Join(ListStates, ", "))}
	}
	if f.Severity != "" && !f.Severity.Valid() {
		return &InputError{Field: "severity", Problem: fmt.Sprintf("%q is not one of info, watch, warning, critical", f.Severity)}
	}
	return nil
}

// Validate checks the limit and that the cursor is one of kind's.
func (p Page) validate(kind string) (int, []string, error) {
	limit := p.Limit
	if limit == 0 {
		limit = DefaultPageLimit
	}
	if limit < 1 || limit > MaxPageLimit {
		return 0, nil, &InputError{Field: "limit", Problem: fmt.Sprintf("%d is not an integer in 1..%d", p.Limit, MaxPageLimit)}
	}
	if p.Cursor == "" {
		return limit, nil, nil
	}
	key, err := decodeCursor(kind, p.Cursor)
	if err != nil {
		return 0, nil, err
	}
	return limit, key, nil
}

// ValidatePage checks a page request for a list of kind ("findings",
// "runs", "silences", "approvals"), naming the field.
func ValidatePage(kind string, p Page) error {
	_, _, err := p.validate(kind)
	return err
}

// Resolve returns the page's effective limit and the sort key after which
// it starts (nil: from the start), for lists kept outside this package.
func (p Page) Resolve(kind string, keyLen int) (int, []string, error) {
	limit, key, err := p.validate(kind)
	if err == nil && key != nil && len(key) != keyLen {
		return 0, nil, &InputError{Field: "cursor", Problem: "not a cursor returned by a previous page of " + kind}
	}
	return limit, key, err
}

// NextCursor is the cursor of the page after the row with this sort key.
func NextCursor(kind string, key ...string) string { return encodeCursor(kind, key...) }

// encodeCursor makes an opaque cursor from the sort key of the last row
// of a page.
func encodeCursor(kind string, key ...string) string {
	data, _ := json.Marshal(append([]string{kind}, key...))
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodeCursor(kind, s string) ([]string, error) {
	bad := &InputError{Field: "cursor", Problem: "not a cursor returned by a previous page of " + kind}
	if len(s) > 1024 {
		return nil, bad
	}
	data, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, bad
	}
	var key []string
	if json.Unmarshal(data, &key) != nil || len(key) < 2 || key[0] != kind {
		return nil, bad
	}
	return key[1:], nil
}

// ListFilter selects findings. Empty fields match everything; Status ""
// means active only, "all" means every status.
type ListFilter struct {
	Status     string
	Severity   Severity
	ResourceID string
}

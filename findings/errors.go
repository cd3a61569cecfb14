package findings

import "errors"

// Sentinel errors.
var (
	// ErrNotFound: no finding (or run) with that id.
	ErrNotFound = errors.New("not found")
	// ErrActionNotAllowed: the operator action does not apply in the finding's state.
	ErrActionNotAllowed = errors.New("action not allowed")
)

package assistant

import "errors"

// Errors the approval decisions (Approve, Deny) return, wrapped with the
// approval id, so a caller such as the HTTP API or the CLI can tell the cases
// apart with errors.Is. They are declared here, by their producer; package
// api re-exports them under the same names.
var (
	ErrApprovalNotFound = errors.New("approval not found")
	ErrApprovalExpired  = errors.New("approval expired")
	ErrApprovalDecided  = errors.New("approval already decided")
)

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

// ErrStoreUnavailable: the session store did not take the call and did
// nothing (a standalone worker's writer is gone, a failover under way). The
// end of a session is stored again until Options.StoreRetry has passed.
var ErrStoreUnavailable = errors.New("session store unavailable")

// ErrNotDispatched: the writer refused to record a session of a finding's
// attempt patrold did not dispatch or whose investigation already ended.
// Nothing can be recorded for it any more, so its request is dropped.
var ErrNotDispatched = errors.New("no open investigation patrold dispatched for this finding and attempt")

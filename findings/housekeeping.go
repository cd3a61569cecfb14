package findings

import "time"

// DismissedRetention is how long a dismissed (not suppressed) finding is
// kept after it was last seen.
const DismissedRetention = 30 * 24 * time.Hour

// SweepResult counts what a sweep did.
type SweepResult struct {
	Deleted    int64 `json:"deleted"`
	Reminded   int   `json:"reminded"`
	Unsilenced int   `json:"unsilenced"`
	Silenced   int   `json:"silenced"`
	// Uninhibited counts findings whose inhibiting parent was no longer
	// active: judged on their own again.
	Uninhibited int `json:"uninhibited"`
}

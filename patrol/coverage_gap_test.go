package patrol

import (
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
)

// TestCoverageGapNeverHealthy: a run with a check it could not evaluate
// is never healthy, even when its coverage_gap finding is quiet (no
// active finding counts); it is not degraded by it either.
func TestCoverageGapNeverHealthy(t *testing.T) {
	rep := newReport("r", TriggerManual, time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC))
	if got := rep.finalStatus(false, 0); got != StatusHealthy {
		t.Fatalf("no gap: %s", got)
	}
	rep.CoverageGaps = 1
	if got := rep.finalStatus(false, 0); got != StatusIssuesFound {
		t.Errorf("a gap, no finding counted: %s, want %s", got, StatusIssuesFound)
	}
	if got := rep.finalStatus(false, findings.SeverityCritical.Rank()); got != StatusCritical {
		t.Errorf("a gap and a critical finding: %s, want %s", got, StatusCritical)
	}
}

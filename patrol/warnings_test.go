package patrol_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/snapshot"
)

// TestReportListsSourceWarnings: a source's warnings (a kept copy used
// because its read failed, say) are in the run report, bounded, and do
// not change the run's status.
func TestReportListsSourceWarnings(t *testing.T) {
	e := newEnv(t)
	e.src = loadExample(t, "small-healthy.json")
	stale := snapshot.Problem{ID: "vm/100", Index: -1, Field: "config", Warning: true,
		Problem: "GET /nodes/pve1/qemu/100/config: timeout; the copy read at 2026-12-06T10:00:00Z is used (stale)"}
	e.problems = []snapshot.Problem{stale}
	rep := e.run()
	if rep.Status != patrol.StatusHealthy || len(rep.StatusReasons) != 0 {
		t.Errorf("status %s %v, want healthy: a warning is not a fault", rep.Status, rep.StatusReasons)
	}
	if !reflect.DeepEqual(rep.Warnings, []snapshot.Problem{stale}) || rep.WarningsDropped != 0 {
		t.Errorf("warnings %+v (dropped %d), want exactly the stale copy", rep.Warnings, rep.WarningsDropped)
	}

	e.problems = nil
	for i := range patrol.MaxReportWarnings + 3 {
		p := stale
		p.ID = fmt.Sprintf("vm/%d", 1000+i)
		e.problems = append(e.problems, p)
	}
	rep = e.run()
	if len(rep.Warnings) != patrol.MaxReportWarnings || rep.WarningsDropped != 3 || rep.Warnings[0].ID != "vm/1000" {
		t.Errorf("%d warnings listed, %d dropped; want the first %d listed and 3 dropped", len(rep.Warnings), rep.WarningsDropped, patrol.MaxReportWarnings)
	}
}

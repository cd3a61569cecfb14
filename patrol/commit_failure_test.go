package patrol_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/store/storetest"
)

// TestFailedCommitReportListsNothingRolledBack: the run record is rendered
// while the findings are written; when the transaction fails the returned
// report is an error that lists no finding of the rolled-back
// transaction, and the next run files them all as new.
func TestFailedCommitReportListsNothingRolledBack(t *testing.T) {
	e := newEnv(t)
	e.src = loadExample(t, "small-faults.json")
	raw := storetest.RawDB(t, e.store.Path())
	// A real SQLite failure in the run's transaction, as a full disk.
	if _, err := raw.Exec(`CREATE TRIGGER fail_outbox BEFORE INSERT ON outbox BEGIN SELECT RAISE(ABORT, 'database or disk is full (test)'); END`); err != nil {
		t.Fatal(err)
	}
	rep := e.run()
	if rep.Status != patrol.StatusError || !reflect.DeepEqual(rep.StatusReasons, []string{patrol.ReasonCommitFailed}) ||
		len(rep.Findings) != 0 || len(rep.Resolved) != 0 || !rep.FinishedAt.IsZero() ||
		len(rep.Errors) != 1 || !strings.Contains(rep.Errors[0], "disk is full (test)") {
		t.Fatalf("failed commit report: status %s reasons %v findings %v resolved %v finished %v errors %v",
			rep.Status, rep.StatusReasons, rep.Findings, rep.Resolved, rep.FinishedAt, rep.Errors)
	}
	if _, err := raw.Exec(`DROP TRIGGER fail_outbox`); err != nil {
		t.Fatal(err)
	}
	rep = e.run()
	if rep.Status != patrol.StatusCritical || changes(rep)["new"] != 9 || len(rep.Findings) != 9 || rep.FinishedAt.IsZero() {
		t.Fatalf("next run: status %s changes %v finished %v", rep.Status, changes(rep), rep.FinishedAt)
	}
}

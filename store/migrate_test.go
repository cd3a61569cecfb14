package store_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/migrations"
	"github.com/patrold/patrold/store"
)

// TestRunSummaryMigration: a database from before migration 7 gets every
// stored run summarised from its report and copied to the run list, and
// later writes and deletes keep the list in step.
func TestRunSummaryMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "p.db")
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 6); err != nil {
		t.Fatal(err)
	}
	report := `{"run_id":"r1","status":"critical","status_reasons":["probe_failed"],"duration_ms":42,
		"resources":{"node":2,"vm":3},"invalid_resources":[{"id":"vm/9"}],"signals":[{},{}],"findings":[{},{},{}],"resolved":["a"],"errors":[]}`
	if _, err := db.Exec(`INSERT INTO runs (id, trigger, status, analysis, started_at, finished_at, complete, report, cost_usd)
		VALUES ('r1', 'scheduled', 'critical', 'deterministic', '2026-11-29T10:00:00Z', '2026-11-29T10:00:01Z', 1, ?, 0.5)`, report); err != nil {
		t.Fatal(err)
	}
	db.Close()
	st, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	list, err := st.Runs(ctx, 10)
	if err != nil || len(list) != 1 {
		t.Fatalf("runs: %v %v", list, err)
	}
	want := &findings.RunSummary{DurationMS: 42, StatusReasons: []string{"probe_failed"}, Resources: 5, InvalidResources: 1,
		Signals: 2, Findings: 3, Resolved: 1, Errors: 0}
	if !reflect.DeepEqual(list[0].Summary, want) || list[0].CostUSD != 0.5 || list[0].Report != nil {
		t.Fatalf("migrated run: %+v summary %+v", list[0], list[0].Summary)
	}
	if spent, _ := st.Spent(list[0].StartedAt.Add(-1)); spent != 0.5 {
		t.Fatalf("spend ledger after migration: %v", spent)
	}
	// Interrupted at the next start: the list follows the update.
	if _, err := st.DB().Exec("UPDATE runs SET status = 'error' WHERE id = 'r1'"); err != nil {
		t.Fatal(err)
	}
	if list, _ = st.Runs(ctx, 10); list[0].Status != "error" {
		t.Fatalf("run list after an update: %+v", list[0])
	}
	if _, err := st.DB().Exec("DELETE FROM runs WHERE id = 'r1'"); err != nil {
		t.Fatal(err)
	}
	if list, _ = st.Runs(ctx, 10); len(list) != 0 {
		t.Fatalf("run list after a delete: %+v", list)
	}
}

// TestSteadyRunsMigration: a database from before migration 12 (with a
// cluster capture trigger naming every findings column) keeps each
// finding's last seen time, last run and times raised, now in
// finding_seen, and migrating down puts them back on the row.
func TestSteadyRunsMigration(t *testing.T) {
	ctx := context.Background()
	path, db, p := migratedTo(t, 11)
	for _, q := range []string{
		`INSERT INTO findings (id, key, resource_id, category, severity, source, status, detected_at, last_seen_at, last_run_id, times_raised)
			VALUES ('f1', 'high_cpu', 'node/a', 'performance', 'warning', 'deterministic', 'active', '2026-11-29T10:00:00Z', '2026-11-29T11:00:00Z', 'run-7', 7)`,
		`CREATE TRIGGER replica_findings_upd AFTER UPDATE ON findings BEGIN SELECT NEW.last_seen_at, NEW.times_raised; END`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.UpTo(ctx, 12); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := st.Get(ctx, "f1")
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := [3]any{f.LastSeenAt.Format(time.RFC3339), f.LastRunID, f.TimesRaised}; got != [3]any{"2026-11-29T11:00:00Z", "run-7", 7} {
		t.Fatalf("after migration 12: last seen, last run, times raised = %v", got)
	}
	if _, err := p.DownTo(ctx, 11); err != nil {
		t.Fatal(err)
	}
	var seen, run string
	var times int
	if err := db.QueryRow("SELECT last_seen_at, last_run_id, times_raised FROM findings WHERE id = 'f1'").Scan(&seen, &run, &times); err != nil {
		t.Fatal(err)
	}
	if got := [3]any{seen, run, times}; got != [3]any{"2026-11-29T11:00:00Z", "run-7", 7} {
		t.Fatalf("after migrating down to 11: %v", got)
	}
}

// migratedTo is a database file migrated up to version (the database, and
// the provider to migrate it further or back).
func migratedTo(t *testing.T, version int64) (string, *sql.DB, *goose.Provider) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "p.db")
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p, err := goose.NewProvider(goose.DialectSQLite3, db, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(context.Background(), version); err != nil {
		t.Fatal(err)
	}
	return path, db, p
}

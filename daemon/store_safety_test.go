package daemon_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/store"
	"github.com/patrold/patrold/store/storetest"
)

// TestDeletedDatabaseMakesDaemonUnready: a database deleted under the
// running daemon turns /readyz 503, naming the file.
func TestDeletedDatabaseMakesDaemonUnready(t *testing.T) {
	dir := t.TempDir()
	useSnapshot(t, dir, "healthy.json")
	d := start(t, testConfig(t, dir, "", ""))
	url := "http://" + d.HTTPAddr() + "/readyz"
	if code, out := call(t, "GET", url, "", ""); code != http.StatusOK {
		t.Fatalf("readyz before: %d %v", code, out)
	}
	db := filepath.Join(dir, daemon.DBFile)
	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		os.Remove(f)
	}
	code, out := call(t, "GET", url, "", "")
	msg, _ := out["message"].(string)
	if code != http.StatusServiceUnavailable || out["error"] != "not_ready" || !strings.Contains(msg, db+": database file missing") {
		t.Fatalf("readyz after delete: %d %v", code, out)
	}
}

// TestNewerSchemaRefusesToStart: a database migrated past this binary's
// migrations is refused with a clear error and left as it is.
func TestNewerSchemaRefusesToStart(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, "", "")
	root, st := openRoot(t, cfg)
	if _, err := storetest.RawDB(t, st.Path()).Exec("INSERT INTO goose_db_version (version_id, is_applied) VALUES (99, 1)"); err != nil {
		t.Fatal(err)
	}
	root.Close()
	reg := prometheus.NewRegistry()
	d, err := daemon.New(daemon.Options{Config: cfg, Registerer: reg, Gatherer: reg})
	if err != nil {
		t.Fatal(err)
	}
	err = d.Start(context.Background())
	d.Stop(context.Background())
	if !errors.Is(err, store.ErrSchemaTooNew) || !strings.Contains(err.Error(), fmt.Sprintf("schema version 99, this patrold knows up to %d", storetest.NewestMigration(t))) {
		t.Fatalf("start on a newer schema: %v", err)
	}
	raw, _ := sql.Open("sqlite3", filepath.Join(dir, daemon.DBFile))
	defer raw.Close()
	var v int
	if err := raw.QueryRow("SELECT max(version_id) FROM goose_db_version").Scan(&v); err != nil || v != 99 {
		t.Fatalf("schema version after refusal: %d %v", v, err)
	}
}

// TestFailedCommitMarksRunErrorAtOnce: when the run's transaction cannot
// commit, the run is recorded as error (commit_failed) before Run returns,
// not left running until the next start.
func TestFailedCommitMarksRunErrorAtOnce(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, "", "")
	useSnapshot(t, dir, "faults.json")
	root, st := openRoot(t, cfg)
	defer root.Close()
	// A real SQLite failure inside the run's transaction: every outbox
	// insert aborts, as a full disk would.
	if _, err := storetest.RawDB(t, st.Path()).Exec(`CREATE TRIGGER fail_outbox BEFORE INSERT ON outbox BEGIN SELECT RAISE(ABORT, 'database or disk is full (test)'); END`); err != nil {
		t.Fatal(err)
	}
	rep, err := root.RunOnce(context.Background(), patrol.RunOptions{}, nil)
	if err == nil || rep == nil || rep.Status != patrol.StatusError {
		t.Fatalf("run: %v %+v", err, rep)
	}
	run, err := st.Run(context.Background(), rep.RunID)
	if err != nil || run.Status != patrol.StatusError || run.FinishedAt == nil ||
		!strings.Contains(string(run.Report), `"status_reasons":["commit_failed"]`) || !strings.Contains(string(run.Report), "disk is full (test)") {
		t.Fatalf("stored run: %+v %s %v", run, run.Report, err)
	}
	list, err := st.Runs(context.Background(), 10)
	if err != nil || len(list) != 1 || list[0].Summary == nil || list[0].Summary.StatusReasons[0] != "commit_failed" {
		t.Fatalf("run list: %+v %v", list, err)
	}
	if n, _ := st.Count(context.Background()); n != 0 {
		t.Fatalf("a rolled-back run stored %d findings", n)
	}
}

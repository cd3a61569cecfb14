package daemon_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/store/storetest"
)

// runAndWait triggers a run and waits until it has finished.
func runAndWait(t *testing.T, d *daemon.Daemon) string {
	t.Helper()
	id, err := d.TriggerRun(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "run "+id+" finished", func() bool {
		run, err := d.Store().Run(context.Background(), id)
		return err == nil && run.FinishedAt != nil && d.Runner().Current() == ""
	})
	return id
}

// unreadyOf reads /readyz and the unready list of /api/v1/status.
func unreadyOf(t *testing.T, base string) (int, string, string) {
	t.Helper()
	code, out := call(t, "GET", base+"/readyz", "", "")
	msg, _ := out["message"].(string)
	_, status := call(t, "GET", base+"/api/v1/status", "admin-secret-0001", "")
	list, _ := json.Marshal(map[string]any{"ready": status["ready"], "unready": status["unready"]})
	return code, msg, string(list)
}

// Store failures a run can meet, each done to a real database file.
// The integrity case corrupts the file for real: the findings' resource index root
// page is pointed at the findings table's own page, so the next insert
// meets a page of the wrong kind (SQLITE_CORRUPT) and quick_check lists
// it. undo ends the failure.
var storeFailures = []struct {
	cond     string
	do, undo []string
}{
	{"run_store",
		[]string{`CREATE TRIGGER fail_outbox BEFORE INSERT ON outbox BEGIN SELECT RAISE(ABORT, 'database or disk is full (test)'); END`},
		[]string{`DROP TRIGGER fail_outbox`}},
	// A message that reads like corruption is not corruption: the file is
	// sound, so the condition is the store's, not integrity.
	{"run_store",
		[]string{`CREATE TRIGGER fail_outbox BEFORE INSERT ON outbox BEGIN SELECT RAISE(ABORT, 'database disk image is malformed (test)'); END`},
		[]string{`DROP TRIGGER fail_outbox`}},
	{"integrity",
		[]string{`PRAGMA writable_schema=ON`, `UPDATE sqlite_schema SET rootpage=(SELECT rootpage FROM sqlite_schema WHERE name='findings') WHERE name='findings_resource'`},
		[]string{`PRAGMA writable_schema=ON`, `UPDATE sqlite_schema SET rootpage=%d WHERE name='findings_resource'`}},
}

// schemaChange runs statements that edit sqlite_schema and bumps the
// schema cookie, so that every open connection reads the schema again.
// A %d in a statement stands for root, the index's own root page.
func schemaChange(t *testing.T, raw *sql.DB, stmts []string, root int) {
	t.Helper()
	conn, err := raw.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	var v int
	if err := conn.QueryRowContext(ctx, `PRAGMA schema_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts {
		if strings.Contains(s, "%d") {
			s = fmt.Sprintf(s, root)
		}
		if _, err := conn.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA schema_version=%d`, v+1)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `PRAGMA writable_schema=OFF`); err != nil {
		t.Fatal(err)
	}
}

func TestReadinessFollowsTheStore(t *testing.T) {
	for i, c := range storeFailures {
		t.Run(fmt.Sprint(i, c.cond), func(t *testing.T) {
			dir := t.TempDir()
			useSnapshot(t, dir, "faults.json")
			d, _, err := startLogged(t, adminConfig(t, dir), false)
			if err != nil {
				t.Fatal(err)
			}
			base := "http://" + d.HTTPAddr()
			if code, msg, list := unreadyOf(t, base); code != http.StatusOK || list != `{"ready":true,"unready":[]}` {
				t.Fatalf("before: %d %s %s", code, msg, list)
			}
			raw := storetest.RawDB(t, filepath.Join(dir, daemon.DBFile))
			var root int
			if err := raw.QueryRow(`SELECT rootpage FROM sqlite_schema WHERE name='findings_resource'`).Scan(&root); err != nil {
				t.Fatal(err)
			}
			schemaChange(t, raw, c.do, root)
			id := runAndWait(t, d)
			detail := "the last run " + id + " failed: commit_failed"
			// The quick_check runs in the background: the first probes may
			// say run_store, and then the verdict stays.
			wantList := `{"ready":false,"unready":[{"condition":"` + c.cond + `","detail":"` + detail + `"}]}`
			var code int
			var msg, list string
			testkit.Eventually(t, 10*time.Second, "readiness names "+c.cond, func() bool {
				code, msg, list = unreadyOf(t, base)
				return list == wantList
			})
			d.WaitIntegrityChecked(t, id)
			code, msg, list = unreadyOf(t, base)
			if code != http.StatusServiceUnavailable || msg != "not ready: "+c.cond+": "+detail || list != wantList {
				t.Fatalf("after a store failure:\n got  %d %q %s\n want 503 %q %s", code, msg, list, "not ready: "+c.cond+": "+detail, wantList)
			}
			schemaChange(t, raw, c.undo, root)
			runAndWait(t, d)
			if code, msg, list := unreadyOf(t, base); code != http.StatusOK || list != `{"ready":true,"unready":[]}` {
				t.Fatalf("after a good run: %d %s %s", code, msg, list)
			}
		})
	}
}

package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
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

func TestReadinessFollowsTheStore(t *testing.T) {
	for _, c := range []struct{ raise, cond string }{
		{"database or disk is full (test)", "run_store"},
		{"database disk image is malformed (test)", "integrity"},
	} {
		t.Run(c.cond, func(t *testing.T) {
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
			if _, err := raw.Exec(`CREATE TRIGGER fail_outbox BEFORE INSERT ON outbox BEGIN SELECT RAISE(ABORT, '` + c.raise + `'); END`); err != nil {
				t.Fatal(err)
			}
			id := runAndWait(t, d)
			detail := "the last run " + id + " failed: commit_failed"
			code, msg, list := unreadyOf(t, base)
			wantList := `{"ready":false,"unready":[{"condition":"` + c.cond + `","detail":"` + detail + `"}]}`
			if code != http.StatusServiceUnavailable || msg != "not ready: "+c.cond+": "+detail || list != wantList {
				t.Fatalf("after a store failure:\n got  %d %q %s\n want 503 %q %s", code, msg, list, "not ready: "+c.cond+": "+detail, wantList)
			}
			if _, err := raw.Exec(`DROP TRIGGER fail_outbox`); err != nil {
				t.Fatal(err)
			}
			runAndWait(t, d)
			if code, msg, list := unreadyOf(t, base); code != http.StatusOK || list != `{"ready":true,"unready":[]}` {
				t.Fatalf("after a good run: %d %s %s", code, msg, list)
			}
		})
	}
}

package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store"
	"github.com/patrold/patrold/store/records"
)

// TestPruneDeletesOnlyOldHistory: each table loses exactly its rows past
// retention; running runs, pending approvals and the sessions they wait
// on stay, and batches cover more rows than one statement deletes.
func TestPruneDeletesOnlyOldHistory(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	ts := func(ago time.Duration) string { return now.Add(-ago).UTC().Format(time.RFC3339Nano) }
	old, recent := 100*24*time.Hour, time.Hour
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := st.DB().Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// 2500 old runs (more than two batches), 1 recent, 1 old but running.
	tx, _ := st.DB().Begin()
	for i := 0; i < 2500; i++ {
		tx.Exec("INSERT INTO runs (id, trigger, status, analysis, started_at, finished_at) VALUES (?, 'scheduled', 'healthy', 'deterministic', ?, ?)",
			fmt.Sprintf("old-%04d", i), ts(old), ts(old))
	}
	tx.Commit()
	exec("INSERT INTO runs (id, trigger, status, analysis, started_at, finished_at) VALUES ('new', 'scheduled', 'healthy', 'deterministic', ?, ?)", ts(recent), ts(recent))
	exec("INSERT INTO runs (id, trigger, status, analysis, started_at) VALUES ('running', 'scheduled', 'running', 'deterministic', ?)", ts(old))
	exec("INSERT INTO audit_events (at, method, path, route, status) VALUES (?, 'POST', '/x', 'r', 200), (?, 'POST', '/y', 'r', 200)",
		now.Add(-old).Format("2006-01-02T15:04:05.000000000Z"), now.Add(-recent).Format("2006-01-02T15:04:05.000000000Z"))
	exec(`INSERT INTO findings (id, key, resource_id, category, severity, source, status, detected_at)
		VALUES ('f1', 'high_cpu', 'node/a', 'performance', 'warning', 'deterministic', 'active', ?)`, ts(old))
	exec(`INSERT INTO finding_seen (id, last_seen_at) VALUES ('f1', ?)`, ts(recent))
	exec("INSERT INTO investigations (finding_id, attempt, started_at, ended_at) VALUES ('f1', 1, ?, ?), ('f1', 2, ?, ?), ('f1', 3, ?, NULL)",
		ts(old), ts(old), ts(recent), ts(recent), ts(old))
	for _, s := range []struct{ id, fin string }{{"s-old", ts(old)}, {"s-new", ts(recent)}, {"s-waiting", ts(old)}} {
		exec("INSERT INTO remediation_sessions (id, finding_id, attempt, driver, started_at, finished_at) VALUES (?, 'f1', 1, 'playbook', ?, ?)", s.id, s.fin, s.fin)
	}
	for _, a := range []struct{ id, session, state, decided string }{
		{"a-old", "s-old", "approved", ts(old)}, {"a-new", "s-new", "denied", ts(recent)}, {"a-pending", "s-waiting", "pending", ""}} {
		var decided any
		if a.decided != "" {
			decided = a.decided
		}
		exec(`INSERT INTO approvals (id, finding_id, session_id, attempt, action, risk, state, created_at, expires_at, decided_at, driver, autonomy, started_at, fsm, transcript)
			VALUES (?, 'f1', ?, 1, 'restart', 'low', ?, ?, ?, ?, 'playbook', 'approval', ?, '{}', '{}')`, a.id, a.session, a.state, ts(old), ts(old), decided, ts(old))
	}
	exec(`INSERT INTO silences (id, matchers, comment, author, starts_at, ends_at, created_at) VALUES
		('sil-old', '{}', 'c', 'a', ?, ?, ?), ('sil-new', '{}', 'c', 'a', ?, ?, ?)`, ts(old), ts(old), ts(old), ts(old), ts(recent), ts(old))

	got, err := st.Prune(ctx, now, findings.DefaultRetention())
	if err != nil {
		t.Fatal(err)
	}
	want := records.Pruned{"runs": 2500, "audit_events": 1, "investigations": 1, "remediation_sessions": 1, "approvals": 1, "silences": 1}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("pruned %v, want %v", got, want)
	}
	left := map[string]string{}
	for table, col := range map[string]string{"runs": "id", "remediation_sessions": "id", "approvals": "id", "silences": "id", "investigations": "attempt"} {
		rows, _ := st.DB().Query("SELECT " + col + " FROM " + table + " ORDER BY " + col)
		var ids []string
		for rows.Next() {
			var id string
			rows.Scan(&id)
			ids = append(ids, id)
		}
		rows.Close()
		left[table] = strings.Join(ids, ",")
	}
	wantLeft := map[string]string{"runs": "new,running", "remediation_sessions": "s-new,s-waiting", "approvals": "a-new,a-pending",
		"silences": "sil-new", "investigations": "2,3"}
	if !reflect.DeepEqual(left, wantLeft) {
		t.Fatalf("left %v, want %v", left, wantLeft)
	}
	if again, _ := st.Prune(ctx, now, findings.DefaultRetention()); !reflect.DeepEqual(again, records.Pruned{"runs": 0, "audit_events": 0,
		"investigations": 0, "remediation_sessions": 0, "approvals": 0, "silences": 0}) {
		t.Fatalf("second prune: %v", again)
	}
}

func TestRetentionValidate(t *testing.T) {
	r := findings.DefaultRetention()
	if p := r.Validate("retention."); len(p) != 0 {
		t.Fatalf("defaults: %v", p)
	}
	r.Runs, r.Audit = 48*time.Hour, time.Minute
	want := []string{"retention.audit: 1m0s is shorter than 1h",
		"retention.runs: 48h0m0s is shorter than 720h0m0s (the 30-day model budget reads the runs)"}
	if p := r.Validate("retention."); !reflect.DeepEqual(p, want) {
		t.Fatalf("problems %q, want %q", p, want)
	}
}

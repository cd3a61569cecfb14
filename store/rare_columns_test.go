package store_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
)

// TestRareColumnsReadBack: the columns that hold their default in nearly
// every row, each set alone, then all together, read back as written, by
// Get and by List.
func TestRareColumnsReadBack(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	at := time.Date(2026, 12, 1, 10, 0, 0, 500_000_000, time.UTC)
	tp := func(d time.Duration) *time.Time { v := at.Add(d); return &v }
	ts := func(d time.Duration) string { return at.Add(d).Format(time.RFC3339Nano) }
	note := "12:3 \"a:b\" 4:x ünïcode\nnext"
	cases := []struct {
		col string
		val any
		set func(f *findings.Finding)
	}{
		{"resolved_at", ts(time.Hour), func(f *findings.Finding) { f.ResolvedAt = tp(time.Hour) }},
		{"resolve_reason", "condition_cleared", func(f *findings.Finding) { f.ResolveReason = "condition_cleared" }},
		{"resolve_note", note, func(f *findings.Finding) { f.ResolveNote = note }},
		{"regression_count", 3, func(f *findings.Finding) { f.RegressionCount = 3 }},
		{"acknowledged_at", ts(2 * time.Hour), func(f *findings.Finding) { f.AcknowledgedAt = tp(2 * time.Hour) }},
		{"snoozed_until", ts(3 * time.Hour), func(f *findings.Finding) { f.SnoozedUntil = tp(3 * time.Hour) }},
		{"dismissed_reason", "will_fix_later", func(f *findings.Finding) { f.DismissedReason = "will_fix_later" }},
		{"dismissed_at", ts(4 * time.Hour), func(f *findings.Finding) { f.DismissedAt = tp(4 * time.Hour) }},
		{"suppressed", 1, func(f *findings.Finding) { f.Suppressed = true }},
		{"seen_while_suppressed", 12, func(f *findings.Finding) { f.SeenWhileSuppressed = 12 }},
		{"investigation_attempts", 2, func(f *findings.Finding) { f.Attempts = 2 }},
		{"investigation_status", "running", func(f *findings.Finding) { f.InvestigationStatus = "running" }},
		{"investigation_started_at", ts(5 * time.Hour), func(f *findings.Finding) { f.InvestigationStarted = tp(5 * time.Hour) }},
		{"last_investigation_at", ts(6 * time.Hour), func(f *findings.Finding) { f.LastInvestigationAt = tp(6 * time.Hour) }},
		{"last_outcome", "fixed", func(f *findings.Finding) { f.LastOutcome = "fixed" }},
		{"investigation_session_id", "sess-1", func(f *findings.Finding) { f.InvestigationSession = "sess-1" }},
		{"fix_summary", "restarted: 2:ok", func(f *findings.Finding) { f.FixSummary = "restarted: 2:ok" }},
		{"previous_fix_summary", "rebooted", func(f *findings.Finding) { f.PreviousFixSummary = "rebooted" }},
		{"flapping", 1, func(f *findings.Finding) { f.Flapping = true }},
		{"silenced", 1, func(f *findings.Finding) { f.Silenced = true }},
		{"investigation_attempt", 4, func(f *findings.Finding) { f.Attempt = 4 }},
	}
	// The others hold a text of digits and colons, as the run filed it.
	base := func(resource string) findings.Finding {
		t.Helper()
		ch := commit(t, st, at, false, fobs(resource, "high_cpu", findings.SeverityWarning, note))
		f, err := st.Get(ctx, ch[0].Finding.ID)
		if err != nil {
			t.Fatal(err)
		}
		if filed := ch[0].Finding; f.Title != filed.Title || f.Evidence != filed.Evidence || f.ResourceID != resource || f.TimesRaised != 1 {
			t.Fatalf("read back %+v\nfiled %+v", f, filed)
		}
		return f
	}
	check := func(name string, want findings.Finding) {
		t.Helper()
		got, err := st.Get(ctx, want.ID)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Get\n%+v\nwant\n%+v", name, got, want)
		}
		all, err := st.List(ctx, findings.ListFilter{Status: "all"})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range all {
			if f.ID == want.ID && !reflect.DeepEqual(f, want) {
				t.Errorf("%s: List\n%+v\nwant\n%+v", name, f, want)
			}
		}
	}
	every := base("node/all")
	for i, c := range cases {
		want := base(fmt.Sprintf("node/%d", i))
		if _, err := st.DB().Exec("UPDATE findings SET "+c.col+" = ? WHERE id = ?", c.val, want.ID); err != nil {
			t.Fatal(err)
		}
		c.set(&want)
		check(c.col, want)
		if _, err := st.DB().Exec("UPDATE findings SET "+c.col+" = ? WHERE id = ?", c.val, every.ID); err != nil {
			t.Fatal(err)
		}
		c.set(&every)
	}
	check("every column", every)
	// A stored flag that is not 0 or 1 is refused, naming its column.
	bad := base("node/bad")
	if _, err := st.DB().Exec("UPDATE findings SET suppressed = 2 WHERE id = ?", bad.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, bad.ID); err == nil || !strings.Contains(err.Error(), `name "suppressed": sql/driver: couldn't convert 2 into type bool`) {
		t.Errorf("a flag of 2: %v", err)
	}
}

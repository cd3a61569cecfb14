package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
)

// TestListPutsTheNetFirst: the default order is deterministic findings
// before model findings, each most severe first, and paging walks the
// same order: a flood of critical model findings never hides a warning
// the net filed.
func TestListPutsTheNetFirst(t *testing.T) {
	st := openStore(t)
	at := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	model := func(resource, key string, sev findings.Severity) findings.Observation {
		o := fobs(resource, key, sev, "model says")
		o.Source = findings.SourceModel
		return o
	}
	commit(t, st, at, false,
		model("vm/1", "fake-1", findings.SeverityCritical), model("vm/2", "fake-2", findings.SeverityCritical),
		fobs("vm/3", "high_memory", findings.SeverityWarning, "net"), model("vm/4", "slow", findings.SeverityInfo),
		fobs("vm/5", "high_cpu", findings.SeverityCritical, "net"), fobs("vm/6", "odd", findings.SeverityInfo, "net"),
	)
	want := []string{"vm/5 critical deterministic", "vm/3 warning deterministic", "vm/6 info deterministic",
		"vm/1 critical model", "vm/2 critical model", "vm/4 info model"}
	describe := func(list []findings.Finding) []string {
		var out []string
		for _, f := range list {
			out = append(out, f.ResourceID+" "+string(f.Severity)+" "+string(f.Source))
		}
		return out
	}
	list, err := st.List(context.Background(), findings.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	// vm/1 and vm/2 were detected at the same time: by id.
	got := describe(list)
	if got[3] > got[4] {
		got[3], got[4] = got[4], got[3]
	}
	if !slices.Equal(got, want) {
		t.Errorf("list\n got %v\nwant %v", got, want)
	}
	var paged []findings.Finding
	cursor := ""
	for {
		page, next, err := st.ListPage(context.Background(), findings.ListFilter{}, findings.Page{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	if !slices.Equal(describe(paged), describe(list)) {
		t.Errorf("pages\n got %v\nwant %v", describe(paged), describe(list))
	}
}

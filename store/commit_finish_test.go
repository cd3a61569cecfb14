package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
)

// TestCommitRunFinishFailure: the run record is rendered (finish) while
// the findings are written; an error from finish rolls every write back
// and is returned, and a panic in finish reaches the caller after the
// transaction rolled back, leaving the store usable.
func TestCommitRunFinishFailure(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	obs := []findings.Observation{fobs("vm/1", "high_cpu", "warning", "cpu 91"), fobs("vm/2", "high_cpu", "critical", "cpu 99")}
	in := findings.RunInput{RunID: "run-1", Now: at, Observations: obs, Policy: findings.DefaultPublishPolicy()}

	_, err := st.CommitRun(ctx, in, func(ch []findings.Change) (findings.RunRecord, []findings.OutboxDraft, error) {
		return findings.RunRecord{}, nil, errors.New("encode run report: broken")
	})
	if err == nil || err.Error() != "commit run run-1: encode run report: broken" {
		t.Fatalf("finish error: %v", err)
	}
	assertEmpty(t, st)

	func() {
		defer func() {
			if p := recover(); p != "report renderer bug" {
				t.Fatalf("panic %v, want the finish panic", p)
			}
		}()
		_, _ = st.CommitRun(ctx, in, func([]findings.Change) (findings.RunRecord, []findings.OutboxDraft, error) {
			panic("report renderer bug")
		})
		t.Fatal("CommitRun returned after finish panicked")
	}()
	assertEmpty(t, st)

	// The store is usable: the same run commits, and finish saw the
	// decided changes (published at the run's time).
	var seen []string
	ch, err := st.CommitRun(ctx, in, func(ch []findings.Change) (findings.RunRecord, []findings.OutboxDraft, error) {
		for _, c := range ch {
			seen = append(seen, c.Finding.ResourceID+" "+string(c.Kind)+" "+c.Finding.LastPublishedEvent)
		}
		return findings.RunRecord{ID: "run-1", Trigger: "manual", Status: "issues_found", StartedAt: at}, nil, nil
	})
	if err != nil || len(ch) != 2 || strings.Join(seen, ",") != "vm/1 new opened,vm/2 new opened" {
		t.Fatalf("changes %d %v, finish saw %q", len(ch), err, seen)
	}
	if n, err := st.Count(ctx); err != nil || n != 2 {
		t.Fatalf("count %d %v", n, err)
	}
}

func assertEmpty(t *testing.T, st interface {
	Count(context.Context) (int, error)
	PendingCount(context.Context) (int64, error)
}) {
	t.Helper()
	n, err := st.Count(context.Background())
	if err != nil || n != 0 {
		t.Fatalf("findings after a failed commit: %d %v", n, err)
	}
	p, err := st.PendingCount(context.Background())
	if err != nil || p != 0 {
		t.Fatalf("outbox rows after a failed commit: %d %v", p, err)
	}
}

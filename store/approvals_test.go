package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/store/records"
)

func approval(id, session string, created time.Time) records.ApprovalRecord {
	return records.ApprovalRecord{
		ID: id, FindingID: "f1", SessionID: session, Attempt: 2, ResourceID: "vm/101", Action: "restart_service",
		Args: json.RawMessage(`{"unit":"nginx"}`), Risk: "medium", State: "pending",
		CreatedAt: created, ExpiresAt: created.Add(5 * time.Minute), Driver: "model", Autonomy: "approval",
		StartedAt: created.Add(-time.Minute), Turns: 3, FSM: json.RawMessage(`{"state":"awaiting_approval"}`),
		Transcript: json.RawMessage(`{"steps":[]}`), Messages: json.RawMessage(`[{"role":"user"}]`), Reason: prompt.Safe("unit is down", 280),
	}
}

func TestApprovalsRoundTripAndDecide(t *testing.T) {
	st, ctx := openStore(t), context.Background()
	a, b := approval("a1", "s1", now), approval("a2", "s2", now.Add(time.Second))
	for _, ap := range []records.ApprovalRecord{a, b} {
		if err := st.InsertApproval(ctx, ap); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := st.Approval(ctx, "a1"); err != nil || !reflect.DeepEqual(got, a) {
		t.Fatalf("Approval = %+v, %v; want %+v", got, err, a)
	}
	if got, err := st.PendingApprovals(ctx, now, nil, 0); err != nil || !reflect.DeepEqual(got, []records.ApprovalRecord{a, b}) {
		t.Fatalf("PendingApprovals = %+v, %v", got, err)
	}
	// After a's sort key, one at a time.
	after := []string{a.CreatedAt.UTC().Format(time.RFC3339Nano), a.ID}
	if got, err := st.PendingApprovals(ctx, now, after, 1); err != nil || !reflect.DeepEqual(got, []records.ApprovalRecord{b}) {
		t.Fatalf("PendingApprovals after a1 = %+v, %v", got, err)
	}
	if got, err := st.FindingApprovals(ctx, "f1"); err != nil || len(got) != 2 {
		t.Fatalf("FindingApprovals = %+v, %v", got, err)
	}

	decided := now.Add(time.Minute)
	if ok, err := st.DecideApproval(ctx, "a1", "approved", "ops", decided); err != nil || !ok {
		t.Fatalf("DecideApproval = %v, %v; want true", ok, err)
	}
	// Decided once: a second decision changes nothing.
	if ok, err := st.DecideApproval(ctx, "a1", "denied", "ops", decided); err != nil || ok {
		t.Fatalf("second DecideApproval = %v, %v; want false", ok, err)
	}
	want := a
	want.State, want.DecidedBy, want.DecidedAt = "approved", "ops", &decided
	if got, err := st.Approval(ctx, "a1"); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("decided Approval = %+v, %v; want %+v", got, err, want)
	}
	if got, err := st.PendingApprovals(ctx, now, nil, 0); err != nil || !reflect.DeepEqual(got, []records.ApprovalRecord{b}) {
		t.Fatalf("PendingApprovals after decision = %+v, %v", got, err)
	}

	// Past its expiry an approval cannot be approved, only expired.
	late := b.ExpiresAt.Add(time.Second)
	if ok, err := st.DecideApproval(ctx, "a2", "approved", "ops", late); err != nil || ok {
		t.Fatalf("late approve = %v, %v; want false", ok, err)
	}
	if got, err := st.DueApprovals(ctx, late); err != nil || !reflect.DeepEqual(got, []records.ApprovalRecord{b}) {
		t.Fatalf("DueApprovals = %+v, %v", got, err)
	}
	if ok, err := st.DecideApproval(ctx, "a2", "expired", "", late); err != nil || !ok {
		t.Fatalf("expire = %v, %v; want true", ok, err)
	}
	if got, err := st.DueApprovals(ctx, late); err != nil || len(got) != 0 {
		t.Fatalf("DueApprovals after expiry = %+v, %v; want none", got, err)
	}
}

func TestApprovalErrors(t *testing.T) {
	st, ctx := openStore(t), context.Background()
	if got, err := st.Approval(ctx, "nope"); !errors.Is(err, findings.ErrNotFound) || !strings.Contains(err.Error(), `approval "nope"`) {
		t.Fatalf("Approval(nope) = %+v, %v; want not found naming the id", got, err)
	}
	bad := approval("a1", "s1", now)
	bad.State = "maybe"
	if err := st.InsertApproval(ctx, bad); err == nil || !strings.Contains(err.Error(), "CHECK constraint failed") {
		t.Fatalf("InsertApproval(state maybe) = %v; want the state check to refuse it", err)
	}
	if err := st.InsertApproval(ctx, approval("a1", "s1", now)); err != nil {
		t.Fatal(err)
	}
	// A session waits for one approval at a time.
	if err := st.InsertApproval(ctx, approval("a2", "s1", now)); err == nil || !strings.Contains(err.Error(), "UNIQUE constraint failed") {
		t.Fatalf("second pending approval of s1 = %v; want refused", err)
	}
	if got, err := st.PendingApprovals(ctx, now, nil, 0); err != nil || len(got) != 1 {
		t.Fatalf("PendingApprovals = %+v, %v; want the one stored", got, err)
	}
}

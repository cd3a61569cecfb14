package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
)

// TestDropUnsentKeepsTheNamedTypes: a deposed writer's outbox loses every
// unsent event but the kept types; sent rows are never touched.
func TestDropUnsentKeepsTheNamedTypes(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	row := func(id, typ string) findings.OutboxEvent {
		return findings.OutboxEvent{ID: id, Subject: "x.y", Type: typ, Time: at, Data: json.RawMessage(`{}`)}
	}
	if err := st.Enqueue(ctx, row("sent", "patrold.finding.opened")); err != nil {
		t.Fatal(err)
	}
	pending, _ := st.PendingEvents(ctx, 10)
	if err := st.MarkSent(ctx, []int64{pending[0].Seq}, at); err != nil {
		t.Fatal(err)
	}
	if err := st.Enqueue(ctx, row("a", "patrold.finding.opened"), row("b", "patrold.state.change"), row("c", "patrold.remediation.outcome")); err != nil {
		t.Fatal(err)
	}
	n, err := st.DropUnsent(ctx, "patrold.remediation.outcome")
	if err != nil || n != 2 {
		t.Fatalf("DropUnsent = %d, %v; want 2", n, err)
	}
	left, err := st.PendingEvents(ctx, 10)
	if err != nil || len(left) != 1 || left[0].ID != "c" {
		t.Fatalf("left pending: %+v %v; want only c", left, err)
	}
}

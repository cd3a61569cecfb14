package store_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/patrold/patrold/store/records"
)

func TestAuditEventsNewestFirstAndPruned(t *testing.T) {
	st, ctx := openStore(t), context.Background()
	var want []records.AuditEvent
	for i := range 3 {
		ev := records.AuditEvent{At: now.Add(time.Duration(i) * time.Second), TokenName: "ops", TokenID: "t1", Method: "POST",
			Path: "/api/v1/findings/x/ack", Route: "finding_action", TargetKind: "finding", TargetID: "x", Action: "ack",
			Status: 200 + i, ErrorCode: "", RemoteAddr: "127.0.0.1:1"}
		if err := st.InsertAudit(ctx, ev); err != nil {
			t.Fatal(err)
		}
		want = append([]records.AuditEvent{ev}, want...)
	}
	if got, err := st.AuditEvents(ctx, 10); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("AuditEvents = %+v, %v; want %+v", got, err, want)
	}
	if got, err := st.AuditEvents(ctx, 1); err != nil || !reflect.DeepEqual(got, want[:1]) {
		t.Fatalf("AuditEvents(1) = %+v, %v", got, err)
	}
	// Before the newest: the two older go.
	if n, err := st.PruneAudit(ctx, now.Add(2*time.Second)); err != nil || n != 2 {
		t.Fatalf("PruneAudit = %d, %v; want 2", n, err)
	}
	if got, err := st.AuditEvents(ctx, 10); err != nil || !reflect.DeepEqual(got, want[:1]) {
		t.Fatalf("AuditEvents after prune = %+v, %v", got, err)
	}
}

package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/store/storetest"
)

func TestAuditRowsForMutations(t *testing.T) {
	e := newEnv(t, testTokens, nil)
	id := e.ids["cpu"]
	e.do("POST", "/api/v1/findings/"+id+"/ack", adminSecret, "")               // 200
	e.do("POST", "/api/v1/findings/"+id+"/undismiss", adminSecret, "")         // 409
	e.do("POST", "/api/v1/findings/"+id+"/snooze", readSecret, `{"for":"4h"}`) // 403
	e.do("POST", "/api/v1/findings/"+id+"/snooze", "", `{"for":"4h"}`)         // 401: no row
	e.do("POST", "/api/v1/findings/"+id+"/snooze", "guess-"+adminSecret, `{}`) // 401: no row
	e.do("POST", "/api/v1/runs", adminSecret, "")                              // 202
	e.do("POST", "/api/v1/silences", adminSecret, `{"matchers":{"kind":"vm"},"comment":"c","duration":"1h"}`)
	e.do("GET", "/api/v1/findings", adminSecret, "") // reads: no row

	rows, err := e.store.AuditEvents(t.Context(), 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 5 {
		t.Fatalf("audit rows = %d, want 5: %+v", len(rows), rows)
	}
	// Newest first.
	sil, run, forbidden, conflict, ack := rows[0], rows[1], rows[2], rows[3], rows[4]
	wantID := api.TokenID(adminSecret)
	if ack.TokenName != "ops" || ack.TokenID != wantID || ack.Method != "POST" || ack.Path != "/api/v1/findings/"+id+"/ack" ||
		ack.TargetKind != "finding" || ack.TargetID != id || ack.Action != "ack" || ack.Status != 200 || ack.ErrorCode != "" || !ack.At.Equal(e.now) {
		t.Errorf("ack row = %+v", ack)
	}
	if conflict.Status != http.StatusConflict || conflict.ErrorCode != string(api.CodeFindingActionNotAllowed) || conflict.Action != "undismiss" {
		t.Errorf("409 row = %+v", conflict)
	}
	if forbidden.TokenName != "dash" || forbidden.TokenID != api.TokenID(readSecret) || forbidden.Status != http.StatusForbidden || forbidden.ErrorCode != string(api.CodeForbidden) {
		t.Errorf("403 row = %+v", forbidden)
	}
	if run.TargetKind != "run" || run.TargetID != "run-1" || run.Status != http.StatusAccepted {
		t.Errorf("trigger row = %+v", run)
	}
	if sil.TargetKind != "silence" || sil.TargetID == "" || sil.Status != 200 {
		t.Errorf("silence row = %+v", sil)
	}

	// No row and no log line carries a secret.
	var dump strings.Builder
	rs, err := storetest.RawDB(t, e.store.Path()).Query("SELECT * FROM audit_events")
	if err != nil {
		t.Fatal(err)
	}
	cols, _ := rs.Columns()
	for rs.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			dump.WriteString(strings.TrimSpace(strings.ReplaceAll(fmtAll(v), "\n", " ")) + "|")
		}
	}
	rs.Close()
	logs := e.logs.String()
	if !strings.Contains(logs, `"msg":"api audit"`) || !strings.Contains(logs, wantID) {
		t.Fatalf("audit events not logged with the token id: %s", logs)
	}
	for _, secret := range []string{adminSecret, readSecret} {
		if strings.Contains(dump.String(), secret) {
			t.Fatalf("an audit row contains a token secret")
		}
		if strings.Contains(logs, secret) {
			t.Fatalf("the log contains a token secret")
		}
	}

	if n, err := e.store.PruneAudit(t.Context(), e.now.Add(time.Second)); err != nil || n != 5 {
		t.Fatalf("PruneAudit = %d, %v; want 5", n, err)
	}
}

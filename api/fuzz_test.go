package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/patrol"
)

// checkDecodeError asserts the shape every decoder error must have.
func checkDecodeError(t *testing.T, e *Error) {
	t.Helper()
	if e.Code != CodeInvalidRequest || (e.Status != http.StatusBadRequest && e.Status != http.StatusRequestEntityTooLarge) {
		t.Fatalf("decoder error %+v is not invalid_request", e)
	}
	field, _ := e.Details["field"].(string)
	if field == "" || !strings.Contains(e.Message, field) {
		t.Fatalf("decoder error does not name its field: %+v", e)
	}
}

func FuzzDecodeAction(f *testing.F) {
	for _, s := range []struct{ action, body string }{
		{"ack", ""}, {"ack", "{}"}, {"snooze", `{"for":"4h"}`}, {"snooze", `{"for":"1h30m"}`},
		{"snooze", `{"for":4}`}, {"snooze", `{"for":null}`}, {"dismiss", `{"reason":"not_an_issue"}`},
		{"resolve", `{"note":"fixed"}`}, {"resolve", `{"note":"a"} x`}, {"suppress", `{"x":1}`},
		{"bogus", "{}"}, {"unsuppress", `[1,2]`}, {"undismiss", `"str"`}, {"snooze", `{"for":"4h","for":"5h"}`},
	} {
		f.Add(s.action, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, action string, body []byte) {
		req, e := decodeAction(action, body)
		if e != nil {
			checkDecodeError(t, e)
			return
		}
		if !knownAction(string(req.Action)) || string(req.Action) != action {
			t.Fatalf("accepted action %q as %q", action, req.Action)
		}
		if req.Action != findings.ActionSnooze && req.For != 0 {
			t.Fatalf("%s carries a duration", action)
		}
		if req.Action != findings.ActionDismiss && req.Reason != "" || req.Action != findings.ActionResolve && req.Note != "" {
			t.Fatalf("%s carries a field it does not accept: %+v", action, req)
		}
	})
}

func FuzzDecodeSilence(f *testing.F) {
	for _, s := range []string{
		`{"matchers":{"resource":"vm/*"},"comment":"c","duration":"2h"}`,
		`{"matchers":{"kind":"vm","tags":["db"]},"comment":"c","author":"a","starts_at":"2026-11-29T10:00:00Z","ends_at":"2026-11-30T10:00:00Z"}`,
		`{"matchers":{"category":"backup","signal_type":"backup_stale"},"comment":"c","duration":"90m"}`,
		`{"matchers":{"x":1},"comment":"c","duration":"2h"}`, `{"matchers":null}`, `{}`, ``, `[]`, `{"duration":"-1h"}`,
		`{"matchers":{"resource":"["},"comment":"c","duration":"2h"}`,
		`{"matchers":{"kind":"vm"},"comment":"c","starts_at":"1970-01-01T00:00:00Z","duration":"2h"}`,
		`{"matchers":{"kind":"vm"},"comment":"c","starts_at":"9999-12-31T23:00:00Z","duration":"2h"}`, `{"matchers":{"kind":"vm"},"comment":"c","duration":"2h"} 1`,
	} {
		f.Add([]byte(s))
	}
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte) {
		sil, e := decodeSilence(body, now, "ops")
		if e != nil {
			checkDecodeError(t, e)
			return
		}
		if err := sil.ValidateAt(now); err != nil {
			t.Fatalf("accepted an invalid silence: %v", err)
		}
		if _, err := json.Marshal(sil); err != nil {
			t.Fatalf("accepted a silence that cannot be encoded: %v", err)
		}
		if !sil.EndsAt.After(sil.StartsAt) || sil.Author == "" {
			t.Fatalf("accepted silence %+v", sil)
		}
	})
}

func FuzzDecodeRunRequest(f *testing.F) {
	for _, s := range []string{"", "{}", `{"resources":["vm/1"],"reason":"alert"}`, `{"resources":[]}`, `{"reason":"x"}`,
		`{"resources":[""]}`, `{"resources":["vm/\u0007"]}`, `{"resources":"vm/1"}`, `{"resources":[1]}`, `{"resources":["a"],"x":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, e := decodeRunRequest(body)
		if e != nil {
			checkDecodeError(t, e)
			return
		}
		if req.Reason != "" && len(req.Resources) == 0 {
			t.Fatalf("a reason without resources accepted: %+v", req)
		}
		if err := patrol.CheckScope(req.Resources, req.Reason); err != nil {
			t.Fatalf("accepted %+v, which CheckScope refuses: %v", req, err)
		}
	})
}

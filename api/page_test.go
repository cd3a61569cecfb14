package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"testing"
	"time"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/findings"
)

// pageAll follows next_cursor from path and returns every item of list.
func pageAll(t *testing.T, e *env, path, list string, limit int) (items []any, pages int) {
	t.Helper()
	cursor := ""
	for pages < 100 {
		q := fmt.Sprintf("%s?limit=%d", path, limit)
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		got, out, _ := e.do("GET", q, adminSecret, "")
		if got != 200 {
			t.Fatalf("GET %s: %d %v", q, got, out)
		}
		page := out[list].([]any)
		if len(page) > limit {
			t.Fatalf("GET %s: %d items, limit %d", q, len(page), limit)
		}
		items, pages = append(items, page...), pages+1
		cursor = out["next_cursor"].(string)
		if cursor == "" {
			return items, pages
		}
	}
	t.Fatalf("%s: no last page", path)
	return nil, 0
}

// TestListsArePaged: every list endpoint pages with limit/cursor and the
// pages put together are the whole list, in order.
func TestListsArePaged(t *testing.T) {
	e := newEnv(t, testTokens, nil)
	for i := 0; i < 4; i++ {
		e.now = e.now.Add(time.Second)
		if got, out, _ := e.do("POST", "/api/v1/silences", adminSecret, fmt.Sprintf(`{"matchers":{"kind":"vm"},"comment":"c%d","duration":"2h"}`, i)); got != 200 {
			t.Fatalf("add silence: %d %v", got, out)
		}
	}
	_, whole, _ := e.do("GET", "/api/v1/findings?limit=1000", adminSecret, "")
	paged, pages := pageAll(t, e, "/api/v1/findings", "findings", 2)
	if pages != 3 || !reflect.DeepEqual(paged, whole["findings"]) || whole["next_cursor"] != "" {
		t.Fatalf("findings: %d pages\n%v\nwhole %v", pages, paged, whole)
	}
	_, whole, _ = e.do("GET", "/api/v1/silences", adminSecret, "")
	paged, pages = pageAll(t, e, "/api/v1/silences", "silences", 3)
	if pages != 2 || len(paged) != 4 || !reflect.DeepEqual(paged, whole["silences"]) {
		t.Fatalf("silences: %d pages %v", pages, paged)
	}
	if paged, pages = pageAll(t, e, "/api/v1/runs", "runs", 1); pages != 1 || len(paged) != 1 {
		t.Fatalf("runs: %d pages %v", pages, paged)
	}
	// Default page size without ?limit.
	_, out, _ := e.do("GET", "/api/v1/findings", adminSecret, "")
	if out["count"] != float64(5) || out["next_cursor"] != "" {
		t.Fatalf("default page: %v", out)
	}
	// A cursor of one list is refused by another, naming the field.
	_, first, _ := e.do("GET", "/api/v1/findings?limit=1", adminSecret, "")
	c := url.QueryEscape(first["next_cursor"].(string))
	for _, path := range []string{"/api/v1/runs?cursor=" + c, "/api/v1/silences?cursor=" + c, "/api/v1/approvals?cursor=" + c,
		"/api/v1/findings?cursor=bm9wZQ", "/api/v1/findings?cursor=%25%25"} {
		e.expectError("GET", path, adminSecret, "", http.StatusBadRequest, api.CodeInvalidRequest, "cursor")
	}
	for _, path := range []string{"/api/v1/findings?limit=1001", "/api/v1/findings?limit=0", "/api/v1/silences?limit=-1", "/api/v1/approvals?limit=x"} {
		e.expectError("GET", path, adminSecret, "", http.StatusBadRequest, api.CodeInvalidRequest, "limit")
	}
}

// TestBadFilterSameMessageAsStore: the API's answer to a bad state is the
// store's own validation message.
func TestBadFilterSameMessageAsStore(t *testing.T) {
	e := newEnv(t, nil, nil)
	_, err := e.store.List(t.Context(), findings.ListFilter{Status: "bogus"})
	out := e.expectError("GET", "/api/v1/findings?state=bogus", "", "", http.StatusBadRequest, api.CodeInvalidRequest, "state")
	if err == nil || out["message"] != err.Error() || err.Error() != `state: "bogus" is not one of active, resolved, all (empty: active)` {
		t.Fatalf("API %q, store %v", out["message"], err)
	}
}

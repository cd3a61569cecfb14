package api_test

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store"
)

// missingFileStore is the store after its file was replaced under the
// daemon: a read opens a connection, and that fails.
type missingFileStore struct {
	api.Store
	path string
}

func (s missingFileStore) Get(_ context.Context, id string) (findings.Finding, error) {
	return findings.Finding{}, fmt.Errorf("get finding %s: %w", id, &store.FileMissingError{Path: s.path})
}

// TestUnavailableStoreAnswers503: an error that says it is unavailable
// (the store's FileMissingError, wrapped) answers 503 not_ready naming
// it, not 500 internal.
func TestUnavailableStoreAnswers503(t *testing.T) {
	e := newEnv(t, testTokens, func(o *api.Options) { o.Store = missingFileStore{Store: o.Store, path: "/var/lib/patrold/patrold.db"} })
	id := e.ids["cpu"]
	code, out, _ := e.do("GET", "/api/v1/findings/"+id, readSecret, "")
	want := map[string]any{"error": string(api.CodeNotReady), "details": map[string]any{},
		"message": "not ready: get finding " + id + ": /var/lib/patrold/patrold.db was replaced or deleted since it was opened: database file missing"}
	if code != http.StatusServiceUnavailable || !reflect.DeepEqual(out, want) {
		t.Fatalf("GET finding: %d %#v, want 503 %#v", code, out, want)
	}
	if strings.Contains(e.logs.String(), "api handler failed") {
		t.Errorf("an unavailable store is logged as a handler failure:\n%s", e.logs.String())
	}
}

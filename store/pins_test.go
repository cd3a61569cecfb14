package store_test

import (
	"slices"
	"testing"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/cluster/sessions"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/store"
	"github.com/patrold/patrold/store/records"
)

// The store is what each consumer's interface asks for. The pins live
// here, with the implementation, so the consumers do not link SQLite.
var (
	_ patrol.Store     = (*store.Store)(nil)
	_ api.Store        = (*store.Store)(nil)
	_ assistant.Store  = (*store.Store)(nil)
	_ cluster.Store    = (*store.Store)(nil)
	_ sessions.Backend = (*store.Store)(nil)
)

// records.PruneTables is the list of the tables Prune sweeps.
func TestPruneTablesAreTheRecordsList(t *testing.T) {
	if got := store.PruneTables(); !slices.Equal(got, records.PruneTables) {
		t.Fatalf("store prunes %q, records lists %q", got, records.PruneTables)
	}
}

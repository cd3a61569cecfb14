package storetest

import (
	"io/fs"
	"strconv"
	"strings"
	"testing"

	"github.com/patrold/patrold/migrations"
)

// NewestMigration is the number of the newest embedded migration: the
// schema version a migrated database reports.
func NewestMigration(tb testing.TB) int {
	tb.Helper()
	names, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil || len(names) == 0 {
		tb.Fatalf("migrations: %v (%d files)", err, len(names))
	}
	n, err := strconv.Atoi(strings.SplitN(names[len(names)-1], "_", 2)[0])
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

package findings_test

import (
	"strings"
	"testing"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/signals"
)

// TestEveryCatalogueTypeIsACanonicalKey keeps each signal's key the one
// the net files it under: a type missing from the aliases was filed as
// its hyphenated spelling (backup-job-failed), so a model's
// backup_job_failed and the net's signal named different keys.
func TestEveryCatalogueTypeIsACanonicalKey(t *testing.T) {
	for _, typ := range signals.Types {
		for _, in := range []string{string(typ), strings.ReplaceAll(string(typ), "_", "-"), strings.ToUpper(string(typ))} {
			if got := findings.NormalizeKey(in); got != string(typ) {
				t.Errorf("NormalizeKey(%q) = %q, want %q", in, got, typ)
			}
		}
	}
}

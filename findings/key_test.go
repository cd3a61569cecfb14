package findings

import "testing"

// TestCanonicalKeysAreFixedPoints: NormalizeKey returns a canonical key
// as it is without normalising it; that is only right because the full
// normalisation maps each of them to itself.
func TestCanonicalKeysAreFixedPoints(t *testing.T) {
	if len(canonicalKeys) < 8 {
		t.Fatalf("canonical keys: %v", canonicalKeys)
	}
	for k := range canonicalKeys {
		if got := normalizeKey(k); got != k {
			t.Errorf("normalizeKey(%q) = %q: the fast path would change what it files", k, got)
		}
	}
	for in, want := range map[string]string{"High CPU": "high_cpu", " disk_full ": "high_disk", "high_cpu": "high_cpu", "Backup-Old": "backup_stale", "": "general", "__": "general"} {
		if got := NormalizeKey(in); got != want {
			t.Errorf("NormalizeKey(%q) = %q, want %q", in, got, want)
		}
	}
}

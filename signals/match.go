package signals

import "github.com/patrold/patrold/snapshot"

// Filed is what matching needs of a finding that was created, re-reported,
// merged into or assessed present during this run.
type Filed struct {
	ResourceID string
	Category   string
}

// Match splits signals into those matched by a finding filed this run (same
// canonical resource id and category) and those left unmatched. The same
// matcher serves production and the evaluation suite.
func Match(sigs []Signal, filed []Filed) (matched, unmatched []Signal) {
	type key struct{ id, cat string }
	seen := make(map[key]bool, len(filed))
	for _, f := range filed {
		seen[key{snapshot.CanonicalID(f.ResourceID), f.Category}] = true
	}
	for _, s := range sigs {
		if seen[key{snapshot.CanonicalID(s.ResourceID), s.Category}] {
			matched = append(matched, s)
		} else {
			unmatched = append(unmatched, s)
		}
	}
	return matched, unmatched
}

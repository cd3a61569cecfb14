package signals

import "github.com/patrold/patrold/snapshot"

// Filed is what matching needs of a finding that was created, re-reported,
// merged into or assessed present during this run.
type Filed struct {
	ResourceID string
	Category   string
	// Severity of the finding: it covers only signals of at most this
	// severity.
	Severity string
}

// SeverityRank orders the finding severities info < watch < warning <
// critical (1..4); anything else ranks 0, below every signal.
func SeverityRank(s string) int {
	switch s {
	case "info":
		return 1
	case "watch":
		return 2
	case SeverityWarning:
		return 3
	case SeverityCritical:
		return 4
	}
	return 0
}

// Match splits signals into those matched by a finding filed this run and
// those left unmatched. A finding matches a signal when it has the same
// canonical resource id, the same category and a severity at least the
// signal's. So an info or watch finding never covers a warning, and a
// model that files benign findings cannot hide real ones. The same
// matcher serves production and the evaluation suite.
func Match(sigs []Signal, filed []Filed) (matched, unmatched []Signal) {
	type key struct{ id, cat string }
	cover := make(map[key]int, len(filed))
	for _, f := range filed {
		k := key{snapshot.CanonicalID(f.ResourceID), f.Category}
		cover[k] = max(cover[k], SeverityRank(f.Severity))
	}
	for _, s := range sigs {
		if r, ok := cover[key{snapshot.CanonicalID(s.ResourceID), s.Category}]; ok && r >= SeverityRank(s.Severity) && r > 0 {
			matched = append(matched, s)
		} else {
			unmatched = append(unmatched, s)
		}
	}
	return matched, unmatched
}

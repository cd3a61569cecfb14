package snapshot

import (
	"errors"
	"strings"
)

// Glob reports whether id matches pattern, where '*' matches any run of
// characters (including '/', so "storage/*" covers every pool) and '?'
// exactly one. Matching is case-sensitive on canonical ids.
func Glob(pattern, id string) bool {
	px, ix := 0, 0
	starP, starI := -1, 0
	for ix < len(id) {
		switch {
		case px < len(pattern) && (pattern[px] == '?' || pattern[px] == id[ix]):
			px++
			ix++
		case px < len(pattern) && pattern[px] == '*':
			starP, starI = px, ix
			px++
		case starP >= 0:
			starI++
			px, ix = starP+1, starI
		default:
			return false
		}
	}
	for px < len(pattern) && pattern[px] == '*' {
		px++
	}
	return px == len(pattern)
}

// ValidGlob rejects patterns that can never be meant: empty, or containing
// whitespace at the ends.
func ValidGlob(pattern string) error {
	if pattern == "" {
		return errors.New("empty glob")
	}
	if strings.TrimSpace(pattern) != pattern {
		return errors.New("glob has leading or trailing spaces")
	}
	return nil
}

package snapshot

import (
	"errors"
	"fmt"
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

// globReserved are characters other glob dialects treat as operators
// (classes, alternatives, escapes). Here only * and ? are wildcards, so a
// pattern an operator types with one of these is refused rather than
// silently matched literally.
const globReserved = `[]{}\`

// CheckGlob is ValidGlob plus what a pattern typed at run time (a
// silence's resource matcher) must also meet, each problem naming the
// byte where it is:
//   - no character of globReserved;
//   - at most MaxIDBytes long;
//   - printable UTF-8, as a resource id is (else it can never match one).
func CheckGlob(pattern string) error {
	if err := ValidGlob(pattern); err != nil {
		return err
	}
	if len(pattern) > MaxIDBytes {
		return fmt.Errorf("glob is longer than %d bytes", MaxIDBytes)
	}
	if i := strings.IndexAny(pattern, globReserved); i >= 0 {
		return fmt.Errorf("%q at byte %d is not a wildcard: only * (any run) and ? (one character) are", pattern[i], i)
	}
	if p := IDProblem(pattern); p != "" {
		return fmt.Errorf("glob can never match a resource id: %s", p)
	}
	return nil
}

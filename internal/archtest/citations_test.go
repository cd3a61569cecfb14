package archtest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// outsideDocs matches a citation of the design files that are not in the
// repository (comments and docs cite docs/ instead):
//   - ARCHITECTURE.md, BEHAVIOUR.md, CONTRACTS.md and STYLE.md as a whole
//     name (docs/PATROL_ARCHITECTURE.md is the repository's own);
//   - "BEHAVIOUR §" and any path into the shared design directory beside
//     the repository (its parent's shared/).
var outsideDocs = regexp.MustCompile(`(?:^|[^A-Za-z0-9_/])(?:ARCHITECTURE\.md|BEHAVIOUR\.md|BEHAVIOUR §|CONTRACTS\.md|STYLE\.md)|\.\./shared/`)

// citationsOutside lists "file:line" for every line below root (Go, SQL,
// Markdown, Python, YAML and the Makefile) that cites a file outside the
// repository.
func citationsOutside(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "var" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".sql", ".md", ".py", ".yaml", ".yml":
		default:
			if d.Name() != "Makefile" {
				return nil
			}
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for i, line := range strings.Split(string(data), "\n") {
			if outsideDocs.MatchString(line) && !strings.Contains(line, "outsideDocs") {
				out = append(out, fmt.Sprintf("%s:%d", filepath.ToSlash(rel), i+1))
			}
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

func TestNothingCitesFilesOutsideTheRepository(t *testing.T) {
	got, err := citationsOutside("../..")
	if err != nil {
		t.Fatal(err)
	}
	// This file names them to forbid them; nothing else may.
	got = slices.DeleteFunc(got, func(s string) bool { return strings.HasPrefix(s, "internal/archtest/citations_test.go:") })
	if len(got) != 0 {
		t.Fatalf("cite docs/ instead of files outside the repository:\n%s", strings.Join(got, "\n"))
	}
}

func TestCitationRuleFailsOnViolation(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"a/a.go":       "package a\n\n// Defaults (CONTRACTS.md §4).\nconst x = 1\n",
		"docs/X.md":    "# X\n\nSee docs/NATS.md.\nThe rules of BEHAVIOUR §7 hold.\n",
		"m/1.sql":      "-- a comment\n-- see ../" + "shared/design/ARCHITECTURE.md\n",
		"clean/c.go":   "package clean\n\n// See docs/FINDINGS.md#loop-states.\n",
		"other/x.json": "{\"see\": \"BEHAVIOUR.md\"}\n",
		"Makefile":     "# BEHAVIOUR.md section 1\n",
		"b/b.go":       "package b\n\n// The pipeline (ARCHITECTURE.md \"A run\").\n// See docs/PATROL_ARCHITECTURE.md and ASSISTANT_ARCHITECTURE.md.\n// Hardened (STYLE.md §17).\n",
	})
	got, err := citationsOutside(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Makefile:1", "a/a.go:3", "b/b.go:3", "b/b.go:5", "docs/X.md:4", "m/1.sql:2"}; !slices.Equal(got, want) {
		t.Fatalf("violations %q, want %q", got, want)
	}
}

package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/patrold/patrold/contracts"
)

// Subjects have one home: contracts spells every subject, bucket and
// queue the instances exchange. A string literal in any other non-test
// file is a subject literal when it is either of:
//   - "patrold_<name>." and more: a core NATS request/reply subject
//     (metric names start with "patrold_" too, but hold no dot);
//   - "patrol.<root>" with root a first token of a published subject
//     (the default prefix and a relative subject, spelled whole).
//
// Tests may spell subjects: they compare whole values.

// subjectRoots are the first tokens of the relative subjects contracts
// builds, and the wildcards.
func subjectRoots() []string {
	fs, _ := contracts.FindingSubjectOf(contracts.FindingOpened, "info")
	as, _, _ := contracts.ApprovalSubject(contracts.ApprovalRequested)
	rs, _ := contracts.RunSubject()
	qs, _ := contracts.RequestSubject()
	var roots []string
	for _, s := range []string{fs, as, rs, qs, contracts.SubjectStateChanges, ">", "*"} {
		root, _, _ := strings.Cut(s, ".")
		if !slices.Contains(roots, root) {
			roots = append(roots, root)
		}
	}
	return roots
}

// subjectLiteral reports whether s spells a subject that belongs in
// contracts.
func subjectLiteral(s string, roots []string) bool {
	if rest, ok := strings.CutPrefix(s, "patrold_"); ok {
		name, _, dot := strings.Cut(rest, ".")
		return dot && name != ""
	}
	if rest, ok := strings.CutPrefix(s, contracts.DefaultSubjectPrefix+"."); ok {
		root, _, _ := strings.Cut(rest, ".")
		return slices.Contains(roots, root)
	}
	return false
}

// subjectLiteralViolations lists "file:line: literal" for every subject
// literal in the non-test Go files below root outside root/contracts,
// sorted.
func subjectLiteralViolations(root string) ([]string, error) {
	roots := subjectRoots()
	fset := token.NewFileSet()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "var" || name == "bin" || rel == "contracts") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err == nil && subjectLiteral(s, roots) {
				out = append(out, fmt.Sprintf("%s:%d: %s", filepath.ToSlash(rel), fset.Position(lit.Pos()).Line, lit.Value))
			}
			return true
		})
		return nil
	})
	slices.Sort(out)
	return out, err
}

func TestNoSubjectLiteralOutsideContracts(t *testing.T) {
	if err := touchSources("../.."); err != nil {
		t.Fatal(err)
	}
	got, err := subjectLiteralViolations("../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("subjects are spelled in contracts only:\n%s", strings.Join(got, "\n"))
	}
	// The rule reads real files: contracts itself has subject literals.
	var inContracts []string
	roots := subjectRoots()
	src, err := os.ReadFile("../../contracts/cluster.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`"patrold_api."`, `"patrold_seed."`, `"patrold_sessions."`} {
		if strings.Contains(string(src), q) && subjectLiteral(q[1:len(q)-1], roots) {
			inContracts = append(inContracts, q)
		}
	}
	if len(inContracts) != 3 {
		t.Fatalf("contracts/cluster.go subject literals the rule sees: %q", inContracts)
	}
}

func TestSubjectLiteralRuleFailsOnViolation(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"contracts/c.go":   "package contracts\n\nconst A = \"patrold_api.\"\nconst B = \"patrol.findings.>\"\n",
		"daemon/fwd.go":    "package daemon\n\nfunc S(p string) string { return \"patrold_api.\" + p }\n",
		"notify/sub.go":    "package notify\n\nvar subs = []string{`patrol.findings.>`, \"patrol.state.changes\", \"patrol.>\"}\n",
		"config/keys.go":   "package config\n\nconst key = \"patrol.autonomy\"\n",
		"api/metrics.go":   "package api\n\nconst m = \"patrold_api_requests_total\"\nconst b = \"patrold_\"\n",
		"daemon/x_test.go": "package daemon\n\nconst want = \"patrold_seed.patrol\"\n",
		"testdata/t.go":    "package testdata\n\nconst x = \"patrol.runs.completed\"\n",
	})
	got, err := subjectLiteralViolations(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`daemon/fwd.go:3: "patrold_api."`,
		"notify/sub.go:3: \"patrol.>\"",
		"notify/sub.go:3: \"patrol.state.changes\"",
		"notify/sub.go:3: `patrol.findings.>`",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("violations\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// clusterMetrics are the metric names the cluster package registers,
// read from its source: every string literal that is a patrold_ name.
func clusterMetrics(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../cluster/metrics.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil && regexp.MustCompile(`^patrold_[a-z_]+$`).MatchString(s) {
				out = append(out, s)
			}
		}
		return true
	})
	slices.Sort(out)
	return slices.Compact(out)
}

// TestClusterMetricsDocumented: OPERATIONS.md names every metric the
// cluster package registers, and every patrold_replica_ or
// patrold_cluster_ metric it names is one of them.
func TestClusterMetricsDocumented(t *testing.T) {
	doc := readDoc(t, "OPERATIONS.md")
	have := clusterMetrics(t)
	if len(have) < 10 {
		t.Fatalf("read %d metric names from cluster/metrics.go: %v", len(have), have)
	}
	for _, m := range have {
		if !strings.Contains(doc, "`"+m+"`") && !strings.Contains(doc, "`"+m+"{") {
			t.Errorf("docs/OPERATIONS.md does not name the cluster metric %s", m)
		}
	}
	for _, m := range regexp.MustCompile("`(patrold_(?:replica|cluster)_[a-z_]+)").FindAllStringSubmatch(doc, -1) {
		if !slices.Contains(have, m[1]) {
			t.Errorf("docs/OPERATIONS.md names %s, which the cluster package does not register", m[1])
		}
	}
}

package api

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var webDocPage = regexp.MustCompile("(?m)^\\| `(/ui/[^`\\[]*)")

// webDocProblems compares the web pages table of API.md with the pages
// the code serves, both ways, and checks the forms' audit routes are named.
func webDocProblems(doc string) []string {
	var p []string
	served := map[string]bool{}
	for pattern := range (&webUI{}).routes() {
		method, path, _ := strings.Cut(pattern, " ")
		if method != "GET" || strings.Contains(path, "...}") || strings.HasSuffix(path, ".css") || path == "/{$}" ||
			strings.Contains(path, "{action}") {
			continue
		}
		served[path] = true
	}
	documented := map[string]bool{}
	for _, m := range webDocPage.FindAllStringSubmatch(section(doc, "## Web pages"), -1) {
		documented[m[1]] = true
		if !served[m[1]] {
			p = append(p, "documented page "+m[1]+" is not served")
		}
	}
	for path := range served {
		if !documented[path] {
			p = append(p, "page "+path+" is not in the web pages table")
		}
	}
	for _, rt := range []string{"web_approval_decide", "web_finding_action", "web_silence_add", "web_silence_expire"} {
		if !strings.Contains(doc, "`"+rt+"`") {
			p = append(p, "audit route "+rt+" is not named")
		}
	}
	slices.Sort(p)
	return p
}

func section(doc, heading string) string {
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		return ""
	}
	rest := doc[i+len(heading)+2:]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

func TestWebDocMatchesPages(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "docs", "API.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	if p := webDocProblems(doc); len(p) > 0 {
		t.Fatalf("docs/API.md web pages:\n%s", strings.Join(p, "\n"))
	}
	broken := strings.Replace(doc, "| `/ui/runs/{id}` |", "| `/ui/run/{id}` |", 1)
	if p := strings.Join(webDocProblems(broken), "\n"); !strings.Contains(p, "/ui/run/{id} is not served") || !strings.Contains(p, "/ui/runs/{id} is not in") {
		t.Fatalf("the guard missed the drift:\n%s", p)
	}
}

package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
)

// assistantDocWords maps the autonomy table's wording to the decisions.
var assistantDocWords = map[string]assistant.Decision{
	"runs": assistant.DecisionRun, "waits for approval": assistant.DecisionApproval, "blocked": assistant.DecisionBlocked,
}

var (
	assistantRow      = regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|(.*)\\|\\s*$")
	assistantAutonomy = []findings.Autonomy{findings.AutonomyMonitor, findings.AutonomyApproval, findings.AutonomyAssisted, findings.AutonomyFull}
)

// section returns the text of the "## name" section of doc.
func assistantSection(doc, name string) string {
	i := strings.Index(doc, "\n## "+name+"\n")
	if i < 0 {
		return ""
	}
	rest := doc[i+len(name)+5:]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// checkAssistantDoc compares docs/ASSISTANT.md with package assistant: the
// autonomy table against Decide for every autonomy and risk, the tools
// table against the declared tool names (both directions), and the
// outcomes table against the contract's outcomes.
func checkAssistantDoc(doc string, decide func(findings.Autonomy, assistant.Risk) assistant.Decision, tools []string) []string {
	var problems []string
	// Autonomy: columns risk low, medium/high, never.
	rows := map[string][]string{}
	for _, m := range assistantRow.FindAllStringSubmatch(assistantSection(doc, "Autonomy"), -1) {
		var cells []string
		for _, c := range strings.Split(m[2], "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		rows[m[1]] = cells
	}
	columns := [][]assistant.Risk{{assistant.RiskLow}, {assistant.RiskMedium, assistant.RiskHigh}, {assistant.RiskNever}}
	for _, a := range assistantAutonomy {
		cells, ok := rows[string(a)]
		if !ok || len(cells) != len(columns) {
			problems = append(problems, "ASSISTANT.md autonomy table: no complete row for "+string(a))
			continue
		}
		for i, risks := range columns {
			for _, r := range risks {
				if got, want := assistantDocWords[cells[i]], decide(a, r); got != want {
					problems = append(problems, "ASSISTANT.md autonomy table: "+string(a)+" with risk "+string(r)+" says "+cells[i]+", code decides "+string(want))
				}
			}
		}
	}
	// Tools, both directions.
	documented := map[string]bool{}
	for _, m := range assistantRow.FindAllStringSubmatch(assistantSection(doc, "The remediation profile"), -1) {
		documented[m[1]] = true
	}
	inCode := map[string]bool{}
	for _, name := range tools {
		inCode[name] = true
		if !documented[name] {
			problems = append(problems, "ASSISTANT.md does not document tool "+name)
		}
	}
	for name := range documented {
		if !inCode[name] {
			problems = append(problems, "ASSISTANT.md documents tool "+name+", which the code does not have")
		}
	}
	// Outcomes: every documented one is a contract outcome.
	for _, m := range assistantRow.FindAllStringSubmatch(assistantSection(doc, "Outcomes"), -1) {
		if !contracts.Outcome(m[1]).Valid() {
			problems = append(problems, "ASSISTANT.md documents outcome "+m[1]+", which is not a contract outcome")
		}
	}
	return problems
}

// assistantToolNames reads the Tool* string constants of package assistant
// from its source, so a new tool is noticed without editing this test.
func assistantToolNames(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("../assistant/*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !strings.HasPrefix(id.Name, "Tool") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						out = append(out, v)
					}
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no Tool* constants found in ../assistant")
	}
	return out
}

func TestAssistantDocMatchesCode(t *testing.T) {
	doc := readDoc(t, "ASSISTANT.md")
	assistantTools := assistantToolNames(t)
	for _, p := range checkAssistantDoc(doc, assistant.Decide, assistantTools) {
		t.Error(p)
	}
}

// TestAssistantGuardFailsOnDrift shows the guard reports a change in the
// code or the document.
func TestAssistantGuardFailsOnDrift(t *testing.T) {
	doc := readDoc(t, "ASSISTANT.md")
	assistantTools := assistantToolNames(t)
	looser := func(a findings.Autonomy, r assistant.Risk) assistant.Decision {
		if a == findings.AutonomyAssisted && r == assistant.RiskMedium {
			return assistant.DecisionRun
		}
		return assistant.Decide(a, r)
	}
	if len(checkAssistantDoc(doc, looser, assistantTools)) == 0 {
		t.Error("a looser autonomy rule in code went unnoticed")
	}
	if len(checkAssistantDoc(doc, assistant.Decide, append(assistantTools, "restart_host"))) == 0 {
		t.Error("a new tool in code went unnoticed")
	}
	if len(checkAssistantDoc(strings.Replace(doc, "| `full` | runs | runs | blocked |", "| `full` | runs | runs | runs |", 1), assistant.Decide, assistantTools)) == 0 {
		t.Error("a doc claiming risk never runs went unnoticed")
	}
	if len(checkAssistantDoc(strings.Replace(doc, "| `cannot_fix` |", "| `gave_up` |", 1), assistant.Decide, assistantTools)) == 0 {
		t.Error("an invented outcome in the doc went unnoticed")
	}
}

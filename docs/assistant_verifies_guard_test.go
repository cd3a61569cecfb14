package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// assistantVerifies reads, from the assistant sources, which remediation
// tools are declared Verifies: every agent.Tool literal whose Name is a
// Tool* constant, and whether it sets Verifies: true.
func assistantVerifies(files map[string]string) map[string]bool {
	fset := token.NewFileSet()
	consts := map[string]string{}
	var parsed []*ast.File
	for name, src := range files {
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			return nil
		}
		parsed = append(parsed, f)
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							consts[id.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
		}
	}
	out := map[string]bool{}
	for _, f := range parsed {
		ast.Inspect(f, func(n ast.Node) bool {
			cl, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			name, verifies := "", false
			for _, e := range cl.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				key, _ := kv.Key.(*ast.Ident)
				val, _ := kv.Value.(*ast.Ident)
				if key == nil || val == nil {
					continue
				}
				switch key.Name {
				case "Name":
					if strings.HasPrefix(val.Name, "Tool") {
						name = consts[val.Name]
					}
				case "Verifies":
					verifies = val.Name == "true"
				}
			}
			if name != "" {
				out[name] = verifies
			}
			return true
		})
	}
	return out
}

// checkAssistantVerifies compares the "verifies" column of ASSISTANT.md's
// profile table with the code.
func checkAssistantVerifies(doc string, code map[string]bool) []string {
	var problems []string
	seen := map[string]bool{}
	for _, m := range assistantRow.FindAllStringSubmatch(assistantSection(doc, "The remediation profile"), -1) {
		cells := strings.Split(m[2], "|")
		if len(cells) < 3 {
			problems = append(problems, "ASSISTANT.md profile table: row "+m[1]+" has no verifies column")
			continue
		}
		says := strings.TrimSpace(cells[1]) == "yes"
		want, ok := code[m[1]]
		seen[m[1]] = true
		if ok && says != want {
			problems = append(problems, "ASSISTANT.md: "+m[1]+" verifies="+strconv.FormatBool(says)+", the code declares "+strconv.FormatBool(want))
		}
	}
	for name := range code {
		if !seen[name] {
			problems = append(problems, "ASSISTANT.md profile table misses "+name)
		}
	}
	return problems
}

func assistantSources(t *testing.T) map[string]string {
	t.Helper()
	names, err := filepath.Glob("../assistant/*.go")
	if err != nil || len(names) == 0 {
		t.Fatalf("assistant sources: %v", err)
	}
	out := map[string]string{}
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(n)] = string(b)
	}
	return out
}

func TestAssistantVerifiesMatchesCode(t *testing.T) {
	doc := readDoc(t, "ASSISTANT.md")
	code := assistantVerifies(assistantSources(t))
	if len(code) < 5 || !code["check_condition"] {
		t.Fatalf("could not read the tool declarations: %v", code)
	}
	for _, p := range checkAssistantVerifies(doc, code) {
		t.Error(p)
	}
}

func TestAssistantVerifiesGuardFailsOnDrift(t *testing.T) {
	doc := readDoc(t, "ASSISTANT.md")
	src := assistantSources(t)
	mutated := map[string]string{}
	hit := false
	for k, v := range src {
		old := "{Name: ToolGetFinding, Kind: agent.KindRead, Schema: json.RawMessage(emptySchema), Idempotent: true,"
		if strings.Contains(v, old) {
			v, hit = strings.Replace(v, old, "{Name: ToolGetFinding, Kind: agent.KindRead, Schema: json.RawMessage(emptySchema), Idempotent: true, Verifies: true,", 1), true
		}
		mutated[k] = v
	}
	if !hit {
		t.Fatal("mutation target not found")
	}
	if len(checkAssistantVerifies(doc, assistantVerifies(mutated))) == 0 {
		t.Error("get_finding declared verifying in code went unnoticed")
	}
	if len(checkAssistantVerifies(strings.Replace(doc, "| `get_finding` | read | no |", "| `get_finding` | read | yes |", 1), assistantVerifies(src))) == 0 {
		t.Error("a doc claiming get_finding verifies went unnoticed")
	}
}

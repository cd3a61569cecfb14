package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// agentTruth is what the agent package's source says.
type agentTruth struct {
	States    map[string]bool   // "RESOLVING", ...
	Kinds     map[string]bool   // "resolve", ...
	Codes     map[string]bool   // "FSM_BLOCKED", ...
	Constants map[string]string // name -> canonical value ("4", "10m0s")
}

// agentGuardedConstants are the tuned constants the safety doc must state.
var agentGuardedConstants = []string{
	"MaxParallelTools", "LookFirstMaxRefusals", "LoopThreshold",
	"MaxToolResultChars", "RecoveryTTL", "DefaultMaxTurns", "MaxStringBytes", "MaxArrayItems", "MaxStoredArgumentBytes",
}

// readAgentTruth parses the agent sources (file name -> text).
func readAgentTruth(files map[string]string) (agentTruth, error) {
	t := agentTruth{States: map[string]bool{}, Kinds: map[string]bool{}, Codes: map[string]bool{}, Constants: map[string]string{}}
	fset := token.NewFileSet()
	for name, src := range files {
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			return t, err
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				vs, ok := spec.(*ast.ValueSpec)
				if !ok {
					continue
				}
				for i, id := range vs.Names {
					if i < len(vs.Values) {
						t.record(gd.Tok, vs.Type, id.Name, vs.Values[i])
					}
				}
			}
		}
	}
	return t, nil
}

func (t *agentTruth) record(tok token.Token, typ ast.Expr, name string, val ast.Expr) {
	typeName := ""
	if id, ok := typ.(*ast.Ident); ok {
		typeName = id.Name
	}
	if tok == token.VAR && name == "kindNames" {
		if cl, ok := val.(*ast.CompositeLit); ok {
			for _, e := range cl.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok {
					if s, ok := agentStringLit(kv.Value); ok {
						t.Kinds[s] = true
					}
				}
			}
		}
		return
	}
	if tok != token.CONST {
		return
	}
	switch {
	case typeName == "State":
		if s, ok := agentStringLit(val); ok {
			t.States[s] = true
		}
	case typeName == "Code":
		if s, ok := agentStringLit(val); ok {
			t.Codes[s] = true
		}
	default:
		if v, ok := agentConstValue(val); ok {
			t.Constants[name] = v
		}
	}
}

func agentStringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

var agentTimeUnits = map[string]time.Duration{"Millisecond": time.Millisecond, "Second": time.Second, "Minute": time.Minute, "Hour": time.Hour}

// agentConstValue evaluates an integer literal or `N * time.Unit`.
func agentConstValue(e ast.Expr) (string, bool) {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind == token.INT {
			return x.Value, true
		}
	case *ast.BinaryExpr:
		lit, ok := x.X.(*ast.BasicLit)
		sel, ok2 := x.Y.(*ast.SelectorExpr)
		if x.Op != token.MUL || !ok || !ok2 || lit.Kind != token.INT {
			return "", false
		}
		n, err := strconv.Atoi(lit.Value)
		unit, known := agentTimeUnits[sel.Sel.Name]
		if err != nil || !known {
			return "", false
		}
		return (time.Duration(n) * unit).String(), true
	}
	return "", false
}

// agentGuardBlock returns the first-column (and second-column) agentBackticked cells
// of the table rows between <!-- guard:NAME --> and <!-- /guard:NAME -->.
func agentGuardBlock(doc, name string) (rows [][2]string, found bool) {
	start := strings.Index(doc, "<!-- guard:"+name+" -->")
	end := strings.Index(doc, "<!-- /guard:"+name+" -->")
	if start < 0 || end < start {
		return nil, false
	}
	for _, line := range strings.Split(doc[start:end], "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if !strings.HasPrefix(strings.TrimSpace(line), "|") || len(cells) < 2 {
			continue
		}
		first, ok := agentBackticked(cells[0])
		if !ok {
			continue // header or separator row
		}
		second, _ := agentBackticked(cells[1])
		rows = append(rows, [2]string{first, second})
	}
	return rows, true
}

func agentBackticked(cell string) (string, bool) {
	c := strings.TrimSpace(cell)
	if len(c) < 3 || c[0] != '`' || c[len(c)-1] != '`' {
		return "", false
	}
	return c[1 : len(c)-1], true
}

// agentCheckSet compares a guarded table with a set from code, both directions.
func agentCheckSet(doc, docName, block string, truth map[string]bool, complete bool) []string {
	rows, ok := agentGuardBlock(doc, block)
	if !ok {
		return []string{fmt.Sprintf("%s: no <!-- guard:%s --> table", docName, block)}
	}
	var problems []string
	named := map[string]bool{}
	for _, r := range rows {
		named[r[0]] = true
		if !truth[r[0]] {
			problems = append(problems, fmt.Sprintf("%s: %s table names %q, which the agent code does not declare", docName, block, r[0]))
		}
	}
	if complete {
		for v := range truth {
			if !named[v] {
				problems = append(problems, fmt.Sprintf("%s: %s table misses %q, declared in the agent code", docName, block, v))
			}
		}
	}
	return problems
}

// agentCheckConstants compares a guarded constants table with the code values.
func agentCheckConstants(doc, docName string, truth map[string]string, required []string) []string {
	rows, ok := agentGuardBlock(doc, "constants")
	if !ok {
		return []string{docName + ": no <!-- guard:constants --> table"}
	}
	var problems []string
	named := map[string]bool{}
	for _, r := range rows {
		named[r[0]] = true
		want, ok := truth[r[0]]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: constant %s is not in the agent code", docName, r[0]))
			continue
		}
		got := r[1]
		if d, err := time.ParseDuration(got); err == nil {
			got = d.String()
		}
		if got != want {
			problems = append(problems, fmt.Sprintf("%s: %s is %q in the doc but %q in the code", docName, r[0], r[1], want))
		}
	}
	for _, name := range required {
		if !named[name] {
			problems = append(problems, fmt.Sprintf("%s: constants table misses %s", docName, name))
		}
	}
	return problems
}

var agentMDLink = regexp.MustCompile(`\]\(([^)#\s]+\.md)(#[^)\s]*)?\)`)

// agentCheckLinks reports relative .md links whose target file does not exist.
func agentCheckLinks(doc, docName string, exists func(string) bool) []string {
	var problems []string
	for _, m := range agentMDLink.FindAllStringSubmatch(doc, -1) {
		if strings.Contains(m[1], "://") {
			continue
		}
		if !exists(m[1]) {
			problems = append(problems, fmt.Sprintf("%s: link to missing %s", docName, m[1]))
		}
	}
	return problems
}

// checkAgentDocs is the guard: agent sources and the two documents in,
// problems out.
func checkAgentDocs(src map[string]string, safety, architecture string, exists func(string) bool) []string {
	truth, err := readAgentTruth(src)
	if err != nil {
		return []string{err.Error()}
	}
	if len(truth.States) == 0 || len(truth.Kinds) == 0 || len(truth.Codes) == 0 {
		return []string{"could not find states, kinds or codes in the agent source"}
	}
	var p []string
	p = append(p, agentCheckSet(safety, "ASSISTANT_SAFETY.md", "states", truth.States, true)...)
	p = append(p, agentCheckSet(safety, "ASSISTANT_SAFETY.md", "kinds", truth.Kinds, true)...)
	p = append(p, agentCheckSet(safety, "ASSISTANT_SAFETY.md", "codes", truth.Codes, true)...)
	p = append(p, agentCheckConstants(safety, "ASSISTANT_SAFETY.md", truth.Constants, agentGuardedConstants)...)
	p = append(p, agentCheckSet(architecture, "ASSISTANT_ARCHITECTURE.md", "codes", truth.Codes, false)...)
	p = append(p, agentCheckConstants(architecture, "ASSISTANT_ARCHITECTURE.md", truth.Constants, []string{"MaxParallelTools", "MaxToolResultChars"})...)
	p = append(p, agentCheckLinks(safety, "ASSISTANT_SAFETY.md", exists)...)
	p = append(p, agentCheckLinks(architecture, "ASSISTANT_ARCHITECTURE.md", exists)...)
	sort.Strings(p)
	return p
}

// loadAgentInputs reads the agent sources (repo root is "..") and the docs;
// a missing file fails the test, it never skips.
func loadAgentInputs(t *testing.T) (map[string]string, string, string) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("..", "agent", "*.go"))
	if err != nil || len(names) == 0 {
		t.Fatalf("agent sources not found: %v", err)
	}
	src := map[string]string{}
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		src[filepath.Base(n)] = string(b)
	}
	read := func(name string) string {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("required document: %v", err)
		}
		return string(b)
	}
	return src, read("ASSISTANT_SAFETY.md"), read("ASSISTANT_ARCHITECTURE.md")
}

func agentFileExists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

func TestAgentDocsMatchCode(t *testing.T) {
	src, safety, arch := loadAgentInputs(t)
	for _, p := range checkAgentDocs(src, safety, arch, agentFileExists) {
		t.Error(p)
	}
}

// TestAgentDocsGuardFailsOnDrift mutates copies of the code and the docs and
// checks that the guard notices each change.
func TestAgentDocsGuardFailsOnDrift(t *testing.T) {
	src, safety, arch := loadAgentInputs(t)
	mutate := func(m map[string]string, old, repl string) map[string]string {
		out := map[string]string{}
		hit := false
		for k, v := range m {
			if !hit && strings.Contains(v, old) {
				v, hit = strings.Replace(v, old, repl, 1), true
			}
			out[k] = v
		}
		if !hit {
			t.Fatalf("mutation target %q not found in the agent sources", old)
		}
		return out
	}
	cases := map[string]struct {
		src         map[string]string
		safety, arc string
	}{
		"parallel cap changed in code": {src: mutate(src, "MaxParallelTools = 4", "MaxParallelTools = 5"), safety: safety, arc: arch},
		"recovery TTL changed in code": {src: mutate(src, "RecoveryTTL = 10 * time.Minute", "RecoveryTTL = 15 * time.Minute"), safety: safety, arc: arch},
		"state added in code": {src: mutate(src, `StateVerifying State = "VERIFYING"`,
			`StateVerifying State = "VERIFYING"`+"\n\tStatePaused State = \"PAUSED\""), safety: safety, arc: arch},
		"code added in code": {src: mutate(src, `CodeLookFirst         Code = "LOOK_FIRST"`,
			`CodeLookFirst         Code = "LOOK_FIRST"`+"\n\tCodeRateLimited Code = \"RATE_LIMITED\""), safety: safety, arc: arch},
		"kind renamed in code":      {src: mutate(src, `KindUserInput: "user_input"`, `KindUserInput: "question"`), safety: safety, arc: arch},
		"doc names unknown code":    {src: src, safety: agentEdit(t, safety, "| `SKIPPED` |", "| `GONE_AWAY` | x |\n| `SKIPPED` |"), arc: arch},
		"doc drops a state":         {src: src, safety: agentEdit(t, safety, "| `WRITING` |", "| WRITING |"), arc: arch},
		"doc constant drifts":       {src: src, safety: agentEdit(t, safety, "| `LoopThreshold` | `3` |", "| `LoopThreshold` | `5` |"), arc: arch},
		"architecture doc constant": {src: src, safety: safety, arc: agentEdit(t, arch, "| `MaxParallelTools` | `4` |", "| `MaxParallelTools` | `8` |")},
	}
	for name, c := range cases {
		if got := checkAgentDocs(c.src, c.safety, c.arc, agentFileExists); len(got) == 0 {
			t.Errorf("%s: the guard reported nothing", name)
		}
	}
	if got := checkAgentDocs(src, safety, arch, func(string) bool { return false }); len(got) == 0 {
		t.Error("broken links were not reported")
	}
}

// agentEdit replaces old with repl once, failing when old is absent.
func agentEdit(t *testing.T, doc, old, repl string) string {
	t.Helper()
	if !strings.Contains(doc, old) {
		t.Fatalf("mutation target %q not found", old)
	}
	return strings.Replace(doc, old, repl, 1)
}

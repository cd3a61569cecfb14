package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"regexp"
	"sort"
	"strings"
)

// A Marker is one `//mutate:` comment: the rule it names and the tests
// that must fail when the rule is removed.
type Marker struct {
	Name string
	Kind string // skip (default), always, negate, cases or rows
	File string
	Line int
	Pkgs []string
	Run  string
}

// A Mutation is a marker with the edit derived from the node below it.
type Mutation struct {
	Marker
	Node        string // what the edit removes or changes, for the report
	At          int    // the line of that node
	Start, End  int    // byte offsets of the replaced span
	Replacement string
	// Switch replaces the same span with code that chooses at run time
	// between the mutation and the original (switch.go); empty where no
	// expression can choose.
	Switch string
	// Check says the switched form may build where the removal does not
	// (a removed statement can leave a name unused): the removal alone
	// is compiled first.
	Check bool
}

// Apply returns src with the mutation's edit made.
func (m Mutation) Apply(src []byte) []byte {
	out := make([]byte, 0, len(src)+len(m.Replacement))
	out = append(out, src[:m.Start]...)
	out = append(out, m.Replacement...)
	return append(out, src[m.End:]...)
}

var markerRE = regexp.MustCompile(`^//mutate:([a-z0-9][a-z0-9-]*)(?::(skip|always|negate|cases|rows))?\s+(\S+)\s+(\S+)\s*$`)

// Derive finds every marker in one Go file and the mutation each implies.
// A marker that names no usable node is an error: a list cannot rot.
func Derive(path string, src []byte) ([]Mutation, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	var markers []Marker
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if !strings.HasPrefix(c.Text, "//mutate:") {
				continue
			}
			sub := markerRE.FindStringSubmatch(c.Text)
			if sub == nil {
				return nil, fmt.Errorf("%s:%d: malformed marker %q (want //mutate:NAME[:kind] PKGS TESTREGEX)",
					path, fset.Position(c.Pos()).Line, c.Text)
			}
			kind := sub[2]
			if kind == "" {
				kind = "skip"
			}
			markers = append(markers, Marker{Name: sub[1], Kind: kind, File: path,
				Line: fset.Position(c.Pos()).Line, Pkgs: strings.Split(sub[3], ","), Run: sub[4]})
		}
	}
	if len(markers) == 0 {
		return nil, nil
	}
	targets := targetsByLine(fset, f)
	var out []Mutation
	for _, mk := range markers {
		t, ok := targets[mk.Line+1]
		if !ok {
			return nil, fmt.Errorf("%s:%d: marker %s: no statement, case or table element starts on the next line",
				path, mk.Line, mk.Name)
		}
		ms, err := deriveAll(fset, src, mk, t)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: marker %s: %w", path, mk.Line, mk.Name, err)
		}
		out = append(out, ms...)
	}
	return out, nil
}

// target is the outermost node that starts on a line, with its parent.
type target struct {
	node   ast.Node
	parent ast.Node
	outer  ast.Node // the parent's parent: a case clause's switch
}

func targetsByLine(fset *token.FileSet, f *ast.File) map[int]target {
	out := map[int]target{}
	var stack []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return false
		}
		var parent, outer ast.Node
		if len(stack) > 0 {
			parent = stack[len(stack)-1]
		}
		if len(stack) > 1 {
			outer = stack[len(stack)-2]
		}
		stack = append(stack, n)
		if !eligible(n, parent) {
			return true
		}
		line := fset.Position(n.Pos()).Line
		if _, seen := out[line]; !seen {
			out[line] = target{node: n, parent: parent, outer: outer}
		}
		return true
	})
	return out
}

// eligible says which nodes a marker may name: statements, case clauses
// and elements of a composite literal.
func eligible(n, parent ast.Node) bool {
	switch n.(type) {
	case *ast.BlockStmt, *ast.EmptyStmt, *ast.DeclStmt, *ast.LabeledStmt:
		return false
	case ast.Stmt, *ast.GenDecl:
		return true
	}
	if lit, ok := parent.(*ast.CompositeLit); ok {
		for _, e := range lit.Elts {
			if e == n {
				return true
			}
		}
	}
	return false
}

// deriveAll expands the two structural kinds into one mutation per
// clause or element, named NAME/<return code or key>; the other kinds
// give one mutation.
func deriveAll(fset *token.FileSet, src []byte, mk Marker, t target) ([]Mutation, error) {
	var parts []target
	switch mk.Kind {
	case "cases":
		body := switchBody(t.node)
		if body == nil {
			return nil, fmt.Errorf("kind cases applies to a switch statement only")
		}
		for _, st := range body.List {
			if cc, ok := st.(*ast.CaseClause); ok && len(cc.List) > 0 {
				parts = append(parts, target{node: cc, parent: body, outer: t.node})
			}
		}
	case "rows":
		lit := firstLiteral(t.node)
		if lit == nil {
			return nil, fmt.Errorf("kind rows needs a composite literal below the marker")
		}
		for _, e := range lit.Elts {
			parts = append(parts, target{node: e, parent: lit})
		}
	default:
		m, err := derive(fset, src, mk, t)
		return []Mutation{m}, err
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("kind %s found nothing to mutate", mk.Kind)
	}
	out := make([]Mutation, 0, len(parts))
	seen := map[string]bool{}
	for i, p := range parts {
		one := mk
		one.Kind = "skip"
		suffix := partName(p.node)
		if suffix == "" || seen[suffix] {
			suffix = fmt.Sprint(i + 1)
		}
		seen[suffix] = true
		one.Name = mk.Name + "/" + suffix
		m, err := derive(fset, src, one, p)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func switchBody(n ast.Node) *ast.BlockStmt {
	switch s := n.(type) {
	case *ast.SwitchStmt:
		return s.Body
	case *ast.TypeSwitchStmt:
		return s.Body
	}
	return nil
}

func firstLiteral(n ast.Node) *ast.CompositeLit {
	var lit *ast.CompositeLit
	ast.Inspect(n, func(c ast.Node) bool {
		if l, ok := c.(*ast.CompositeLit); ok && lit == nil {
			lit = l
		}
		return lit == nil
	})
	return lit
}

var unsafeName = regexp.MustCompile(`[^a-z0-9]+`)

// partName names a case by the last identifier it returns and a table
// row by its key, so a report line says which rule was removed.
func partName(n ast.Node) string {
	var s string
	switch c := n.(type) {
	case *ast.CaseClause:
		if len(c.Body) > 0 {
			if r, ok := c.Body[len(c.Body)-1].(*ast.ReturnStmt); ok && len(r.Results) > 0 {
				if id, ok := r.Results[len(r.Results)-1].(*ast.Ident); ok {
					s = id.Name
				}
			}
		}
	case *ast.CompositeLit:
		// A row of a table of structs is named by its first field.
		if len(c.Elts) > 0 {
			return partName(&ast.KeyValueExpr{Key: c.Elts[0]})
		}
	case *ast.KeyValueExpr:
		switch k := c.Key.(type) {
		case *ast.BasicLit:
			s = k.Value
		case *ast.Ident:
			s = k.Name
		case *ast.SelectorExpr:
			s = k.Sel.Name
		}
	}
	return strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

func derive(fset *token.FileSet, src []byte, mk Marker, t target) (Mutation, error) {
	off := func(p token.Pos) int { return fset.Position(p).Offset }
	text := func(n ast.Node) string { return string(src[off(n.Pos()):off(n.End())]) }
	m := Mutation{Marker: mk, At: fset.Position(t.node.Pos()).Line}
	if mk.Kind == "always" || mk.Kind == "negate" {
		if _, ok := t.node.(*ast.IfStmt); !ok {
			return m, fmt.Errorf("kind %s applies to an if statement only", mk.Kind)
		}
	}
	switch n := t.node.(type) {
	case *ast.IfStmt:
		m.Node = "if " + oneLine(fset, n.Cond)
		m.Start, m.End = off(n.Cond.Pos()), off(n.Cond.End())
		on := switchCall(mk.Name)
		switch mk.Kind {
		case "always":
			m.Replacement = "true || (" + text(n.Cond) + ")"
			m.Switch = on + " || (" + text(n.Cond) + ")"
		case "negate":
			m.Replacement = "!(" + text(n.Cond) + ")"
			m.Switch = on + " != (" + text(n.Cond) + ")"
		default:
			m.Replacement = "false && (" + text(n.Cond) + ")"
			m.Switch = "!" + on + " && (" + text(n.Cond) + ")"
		}
	case *ast.CaseClause:
		s, ok := t.outer.(*ast.SwitchStmt)
		tagless := ok && s.Tag == nil
		if len(n.List) == 0 {
			return m, fmt.Errorf("a default clause cannot be removed")
		}
		m.Node = "case " + oneLine(fset, n.List[0])
		if tagless {
			m.Start, m.End = off(n.List[0].Pos()), off(n.List[len(n.List)-1].End())
			parts := make([]string, len(n.List))
			for i, e := range n.List {
				parts[i] = "(" + text(e) + ")"
			}
			m.Replacement = "false && (" + strings.Join(parts, " || ") + ")"
			m.Switch = "!" + switchCall(mk.Name) + " && (" + strings.Join(parts, " || ") + ")"
		} else {
			m.Start, m.End = lineStart(src, off(n.Pos())), off(n.End())
		}
	case ast.Stmt:
		m.Node = firstLine(text(n))
		m.Start, m.End = off(n.Pos()), off(n.End())
		if switchable(n) {
			m.Switch = "if !" + switchCall(mk.Name) + " {\n" + text(n) + "\n}"
			m.Check = true
		}
	default:
		// A composite literal element: drop it with its comma.
		m.Node = firstLine(text(n))
		m.Start, m.End = lineStart(src, off(n.Pos())), off(n.End())
		if m.End < len(src) && src[m.End] == ',' {
			m.End++
		}
	}
	return m, nil
}

func lineStart(src []byte, off int) int {
	for off > 0 && (src[off-1] == '\t' || src[off-1] == ' ') {
		off--
	}
	return off
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}

func oneLine(fset *token.FileSet, n ast.Node) string {
	var b bytes.Buffer
	_ = printer.Fprint(&b, fset, n)
	return firstLine(b.String())
}

// sample picks n mutations by a stable order of their names, so CI runs
// the same sample every time and a new marker may enter it.
func sample(ms []Mutation, n int) []Mutation {
	if n <= 0 || n >= len(ms) {
		return ms
	}
	sorted := append([]Mutation(nil), ms...)
	sort.Slice(sorted, func(i, j int) bool { return fnv(sorted[i].Name) < fnv(sorted[j].Name) })
	return sorted[:n]
}

func fnv(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

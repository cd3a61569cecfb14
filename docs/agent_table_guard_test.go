package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"sort"
	"strings"
	"testing"
)

// agentTables is what the agent source declares as tables: the ordered
// pre-check, the state machine's transitions and which codes handlers may
// return.
type agentTables struct {
	Prechecks   [][2]string     // check, code, in order
	Transitions map[string]bool // "FROM event TO"
	FromHandler map[string]bool // code -> a handler may return it
}

// readAgentTables parses the agent sources for the prechecks slice, the
// transitions map and the code catalogue, resolving identifiers to the
// values of their constants.
func readAgentTables(files map[string]string) (agentTables, error) {
	out := agentTables{Transitions: map[string]bool{}, FromHandler: map[string]bool{}}
	fset := token.NewFileSet()
	consts := map[string]string{} // identifier -> string value
	vars := map[string]ast.Expr{}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		f, err := parser.ParseFile(fset, name, files[name], parser.SkipObjectResolution)
		if err != nil {
			return out, err
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
					if i >= len(vs.Values) {
						continue
					}
					if gd.Tok == token.CONST {
						if s, ok := agentStringLit(vs.Values[i]); ok {
							consts[id.Name] = s
						}
					} else {
						vars[id.Name] = vs.Values[i]
					}
				}
			}
		}
	}
	ident := func(e ast.Expr) string {
		if id, ok := e.(*ast.Ident); ok {
			return id.Name
		}
		return ""
	}
	// Phases: phX = Phase{StateY, bool} or Phase{State: "literal"}.
	phase := map[string]string{}
	for name, e := range vars {
		cl, ok := e.(*ast.CompositeLit)
		if !ok || ident(cl.Type) != "Phase" || len(cl.Elts) == 0 {
			continue
		}
		switch first := cl.Elts[0].(type) {
		case *ast.KeyValueExpr:
			if s, ok := agentStringLit(first.Value); ok {
				phase[name] = s
			}
		case *ast.Ident:
			st := consts[first.Name]
			if st == "VERIFYING" && len(cl.Elts) == 2 {
				if ident(cl.Elts[1]) == "true" {
					st += "(read)"
				} else {
					st += "(unread)"
				}
			}
			phase[name] = st
		}
	}
	tr, ok := vars["transitions"].(*ast.CompositeLit)
	if !ok {
		return out, fmt.Errorf("no transitions table in the agent source")
	}
	for _, e := range tr.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		from := phase[ident(kv.Key)]
		row, ok := kv.Value.(*ast.CompositeLit)
		if !ok {
			continue
		}
		for _, c := range row.Elts {
			if ckv, ok := c.(*ast.KeyValueExpr); ok {
				out.Transitions[from+" "+consts[ident(ckv.Key)]+" "+phase[ident(ckv.Value)]] = true
			}
		}
	}
	pc, ok := vars["prechecks"].(*ast.CompositeLit)
	if !ok {
		return out, fmt.Errorf("no prechecks table in the agent source")
	}
	for _, e := range pc.Elts {
		if cl, ok := e.(*ast.CompositeLit); ok && len(cl.Elts) >= 2 {
			out.Prechecks = append(out.Prechecks, [2]string{consts[ident(cl.Elts[0])], consts[ident(cl.Elts[1])]})
		}
	}
	cat, ok := vars["codeCatalogue"].(*ast.CompositeLit)
	if !ok {
		return out, fmt.Errorf("no code catalogue in the agent source")
	}
	for _, e := range cat.Elts {
		if cl, ok := e.(*ast.CompositeLit); ok && len(cl.Elts) == 3 {
			out.FromHandler[consts[ident(cl.Elts[0])]] = ident(cl.Elts[2]) == "true"
		}
	}
	if len(out.Transitions) == 0 || len(out.Prechecks) == 0 || len(out.FromHandler) == 0 {
		return out, fmt.Errorf("empty tables in the agent source")
	}
	return out, nil
}

// agentRows returns the backticked cells of every table row of a guard block.
func agentRows(doc, name string) ([][]string, []string, bool) {
	start := strings.Index(doc, "<!-- guard:"+name+" -->")
	end := strings.Index(doc, "<!-- /guard:"+name+" -->")
	if start < 0 || end < start {
		return nil, nil, false
	}
	var rows [][]string
	var raw []string
	for _, line := range strings.Split(doc[start:end], "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "|") {
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|") {
			if v, ok := agentBackticked(c); ok {
				cells = append(cells, v)
			}
		}
		if len(cells) > 0 {
			rows = append(rows, cells)
			raw = append(raw, line)
		}
	}
	return rows, raw, true
}

// checkAgentTables compares the safety doc's prechecks, transitions and
// code-origin columns with the code.
func checkAgentTables(src map[string]string, safety string) []string {
	tb, err := readAgentTables(src)
	if err != nil {
		return []string{err.Error()}
	}
	var p []string
	rows, _, ok := agentRows(safety, "prechecks")
	if !ok {
		p = append(p, "ASSISTANT_SAFETY.md: no <!-- guard:prechecks --> table")
	}
	var doc [][2]string
	for _, r := range rows {
		if len(r) >= 2 {
			doc = append(doc, [2]string{r[0], r[1]})
		}
	}
	if ok && !slices.Equal(doc, tb.Prechecks) {
		p = append(p, fmt.Sprintf("ASSISTANT_SAFETY.md: prechecks table %v, the code runs %v", doc, tb.Prechecks))
	}
	rows, _, ok = agentRows(safety, "transitions")
	if !ok {
		p = append(p, "ASSISTANT_SAFETY.md: no <!-- guard:transitions --> table")
	}
	named := map[string]bool{}
	for _, r := range rows {
		if len(r) != 3 {
			continue
		}
		t := strings.Join(r, " ")
		named[t] = true
		if !tb.Transitions[t] {
			p = append(p, "ASSISTANT_SAFETY.md: transition "+t+" is not in the code's table")
		}
	}
	for t := range tb.Transitions {
		if ok && !named[t] {
			p = append(p, "ASSISTANT_SAFETY.md: transitions table misses "+t)
		}
	}
	rows, raw, ok := agentRows(safety, "codes")
	if ok {
		for i, r := range rows {
			cells := strings.Split(strings.Trim(strings.TrimSpace(raw[i]), "|"), "|")
			from := strings.TrimSpace(cells[len(cells)-1])
			want, known := tb.FromHandler[r[0]]
			if known && strings.Contains(from, "handler") != want {
				p = append(p, fmt.Sprintf("ASSISTANT_SAFETY.md: code %s says from %q, but FromHandler is %v", r[0], from, want))
			}
		}
	}
	sort.Strings(p)
	return p
}

func TestAgentTablesMatchCode(t *testing.T) {
	src, safety, _ := loadAgentInputs(t)
	for _, p := range checkAgentTables(src, safety) {
		t.Error(p)
	}
}

// TestAgentTablesGuardFailsOnDrift changes copies of the code and the doc
// and checks the guard notices each change.
func TestAgentTablesGuardFailsOnDrift(t *testing.T) {
	src, safety, _ := loadAgentInputs(t)
	mutate := func(old, repl string) map[string]string {
		out := map[string]string{}
		hit := false
		for k, v := range src {
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
		src    map[string]string
		safety string
	}{
		"precheck removed in code":   {mutate("\t{CheckConditionPresent, CodePolicyBlocked,", "\t// {CheckConditionPresent, CodePolicyBlocked,"), safety},
		"precheck reordered in code": {mutate("\t{CheckBudget, CodeBudgetExhausted, scopeAll,", "\t{CheckLoop, CodeLoopDetected, scopeAll, \"\", checkLoop},\n\t{CheckBudget, CodeBudgetExhausted, scopeAll,"), safety},
		"transition added in code": {mutate("EventBeginWrite: phWriting, EventWriteDone: phUnverified,\n\t\tEventReset: phResolving, EventResetKeepProgress: phReading,\n\t},\n\tphWriting",
			"EventBeginWrite: phWriting, EventWriteDone: phUnverified,\n\t\tEventReset: phResolving, EventResetKeepProgress: phReading, EventCompleteVerification: phReading,\n\t},\n\tphWriting"), safety},
		"unverified keep-progress admitted in code": {mutate("EventWriteDone: phUnverified, EventReset: phResolving,\n\t},\n\tphVerified",
			"EventWriteDone: phUnverified, EventReset: phResolving, EventResetKeepProgress: phReading,\n\t},\n\tphVerified"), safety},
		"handler code widened in code": {mutate(`{CodeFSMBlocked, "the session state machine refused the call (e.g. a write before verifying the previous one)", false}`,
			`{CodeFSMBlocked, "the session state machine refused the call (e.g. a write before verifying the previous one)", true}`), safety},
		"doc drops a transition":     {src, agentEdit(t, safety, "| `READING` | `begin_write` | `WRITING` |\n", "")},
		"doc reorders prechecks":     {src, agentEdit(t, safety, "| 14 | `budget` | `BUDGET_EXHAUSTED` |", "| 14 | `loop` | `LOOP_DETECTED` |")},
		"doc says handler may forge": {src, agentEdit(t, safety, "the state machine refused the call | runtime |", "the state machine refused the call | runtime, handler |")},
	}
	for name, c := range cases {
		if got := checkAgentTables(c.src, c.safety); len(got) == 0 {
			t.Errorf("%s: the guard reported nothing", name)
		}
	}
}

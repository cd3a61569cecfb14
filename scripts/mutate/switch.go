package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Switched mutations share one build. Each marked `if` condition,
// tagless case and removable statement is rewritten to ask switchEnv
// whether its mutation is the one on; one overlay holds them all. Each
// package a marker names is then built into one test binary, run once
// per mutation. Building is most of a mutation's time, so this saves
// most of the run (docs/MUTATIONS.md).

// switchEnv names the one mutation a switched test binary runs with.
// It does not start with PATROLD_: the config reads those.
const switchEnv = "MUTATE_ACTIVE"

// switchFile is the file the overlay adds to each switched package.
const switchFile = "zz_mutate_switch.go"

// switchable says a statement can be wrapped in `if !on { ... }` with
// the same meaning: not a declaration, not a terminating panic.
func switchable(n ast.Stmt) bool {
	switch s := n.(type) {
	case *ast.AssignStmt:
		return s.Tok != token.DEFINE
	case *ast.ExprStmt:
		call, ok := s.X.(*ast.CallExpr)
		if !ok {
			return true
		}
		id, ok := call.Fun.(*ast.Ident)
		return !ok || id.Name != "panic"
	case *ast.IncDecStmt, *ast.SendStmt, *ast.GoStmt, *ast.ForStmt, *ast.RangeStmt:
		return true
	}
	return false
}

func switchCall(name string) string { return "mutateActive_(" + strconv.Quote(name) + ")" }

// switchSource declares mutateActive_ in package pkg.
func switchSource(pkg string) string {
	return "package " + pkg + "\n\nimport mutateos_ \"os\"\n\n" +
		"var mutateActiveName_ = mutateos_.Getenv(\"" + switchEnv + "\")\n\n" +
		"func mutateActive_(name string) bool { return name == mutateActiveName_ }\n"
}

// Switched is the shared build: a test binary for each package.
type Switched struct {
	dir  string
	in   map[string]bool   // the mutations the overlay holds
	bins map[string]string // package -> test binary; "" when it has no tests
}

// Close removes the binaries.
func (s *Switched) Close() {
	if s != nil {
		os.RemoveAll(s.dir)
	}
}

// Has says whether m runs on the shared build.
func (s *Switched) Has(m Mutation) bool {
	if s == nil || !s.in[m.Name] {
		return false
	}
	for _, p := range m.Pkgs {
		if _, ok := s.bins[p]; !ok {
			return false
		}
	}
	return true
}

// BuildSwitched writes the switched form of ms into one overlay and
// builds a test binary for each package they name, jobs at a time. A
// mutation it cannot switch (a removed statement or row, an edit that
// overlaps another) or whose package did not build runs on its own
// overlay instead: s.Has says which. The log gets one line a package
// that did not build.
func BuildSwitched(root string, ms []Mutation, jobs int, log func(string)) (*Switched, error) {
	dir, err := os.MkdirTemp("", "mutate-switch-")
	if err != nil {
		return nil, err
	}
	s := &Switched{dir: dir, in: map[string]bool{}, bins: map[string]string{}}
	byFile := map[string][]Mutation{}
	for _, m := range ms {
		if m.Switch != "" {
			byFile[m.File] = append(byFile[m.File], m)
		}
	}
	replace := map[string]string{}
	in := s.in
	for file, fms := range byFile {
		path, err := filepath.Abs(filepath.Join(root, file))
		if err != nil {
			return s, err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return s, err
		}
		// From the end, so each offset still holds; an edit that overlaps
		// the one after it is left out.
		sort.Slice(fms, func(i, j int) bool { return fms[i].Start > fms[j].Start })
		out, limit := src, len(src)
		for _, m := range fms {
			if m.End > limit {
				continue
			}
			out = append(append(append([]byte{}, out[:m.Start]...), m.Switch...), out[m.End:]...)
			limit = m.Start
			in[m.Name] = true
		}
		name := filepath.Join(dir, fmt.Sprintf("%d-%s", len(replace), filepath.Base(path)))
		if err := os.WriteFile(name, out, 0o644); err != nil {
			return s, err
		}
		replace[path] = name
		helper := filepath.Join(filepath.Dir(path), switchFile)
		if _, done := replace[helper]; !done {
			f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.PackageClauseOnly)
			if err != nil {
				return s, err
			}
			hname := filepath.Join(dir, fmt.Sprintf("%d-%s", len(replace), switchFile))
			if err := os.WriteFile(hname, []byte(switchSource(f.Name.Name)), 0o644); err != nil {
				return s, err
			}
			replace[helper] = hname
		}
	}
	if len(in) == 0 {
		return s, nil
	}
	overlay := filepath.Join(dir, "overlay.json")
	ov, _ := json.Marshal(map[string]map[string]string{"Replace": replace})
	if err := os.WriteFile(overlay, ov, 0o644); err != nil {
		return s, err
	}
	var pkgs []string
	seen := map[string]bool{}
	for _, m := range ms {
		if !in[m.Name] {
			continue
		}
		for _, p := range m.Pkgs {
			if !seen[p] {
				seen[p] = true
				pkgs = append(pkgs, p)
			}
		}
	}
	var mu sync.Mutex
	work := make(chan int)
	var wg sync.WaitGroup
	for range max(jobs, 1) {
		wg.Go(func() {
			for i := range work {
				bin := filepath.Join(dir, fmt.Sprintf("pkg%d.test", i))
				cmd := exec.Command("go", "test", "-c", "-overlay", overlay, "-o", bin, pkgs[i])
				cmd.Dir = root
				out, err := cmd.CombinedOutput()
				mu.Lock()
				switch _, serr := os.Stat(bin); {
				case err != nil:
					log(fmt.Sprintf("mutate: %s did not build switched; its mutations build alone:\n%s", pkgs[i], indent(tail(string(out), 6))))
				case serr != nil:
					s.bins[pkgs[i]] = "" // no test files
				default:
					s.bins[pkgs[i]] = bin
				}
				mu.Unlock()
			}
		})
	}
	for i := range pkgs {
		work <- i
	}
	close(work)
	wg.Wait()
	return s, nil
}

// CheckBuild compiles m's package with the removal itself, not its
// switched form: BROKEN when it does not build (a name left unused).
func CheckBuild(root string, m Mutation) (string, string) {
	dir, overlay, err := overlayFor(root, m)
	defer os.RemoveAll(dir)
	if err != nil {
		return "BROKEN", err.Error()
	}
	cmd := exec.Command("go", "list", "-e", "-export", "-overlay", overlay,
		"-f", "{{with .Error}}{{.}}{{end}}", "./"+filepath.ToSlash(filepath.Dir(m.File)))
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		return "BROKEN", string(out)
	}
	return "", ""
}

// RunSwitched runs m's tests on the shared build with m switched on,
// package by package until one fails. Its verdicts are Run's, but never
// BROKEN: a switched package that did not build is not run here.
func RunSwitched(root string, s *Switched, m Mutation) (string, string) {
	if m.Check {
		if verdict, out := CheckBuild(root, m); verdict != "" {
			return verdict, out
		}
	}
	var all strings.Builder
	passed := 0
	for _, pkg := range m.Pkgs {
		bin := s.bins[pkg]
		if bin == "" {
			continue
		}
		cmd := exec.Command(bin, "-test.count=1", "-test.failfast", "-test.timeout=300s", "-test.run", m.Run)
		cmd.Dir = filepath.Join(root, pkg)
		cmd.Env = append(os.Environ(), switchEnv+"="+m.Name)
		b, err := cmd.CombinedOutput()
		_ = exec.Command("git", "-C", root, "clean", "-fdq", "--", ":(glob)**/testdata/rapid/**").Run()
		out := string(b)
		all.WriteString(out)
		if err != nil {
			return "caught", all.String()
		}
		if !strings.Contains(out, "testing: warning: no tests to run") {
			passed++
		}
	}
	if passed == 0 {
		return "NO-TESTS", all.String()
	}
	return "SURVIVED", all.String()
}

// Command mutate proves that each marked safety rule is tested. It finds
// every `//mutate:NAME[:kind] PKGS TESTREGEX` comment in the tree,
// derives the mutation from the code below it (docs/MUTATIONS.md), applies
// each in turn, runs the named tests and reports whether they fail.
// Every file is restored. A mutation no test catches, or one that no
// longer builds, fails the run.
//
// Usage: go run ./scripts/mutate [-list] [-only a,b] [-sample N] [-j N] [-alone] [-v]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

func main() {
	list := flag.Bool("list", false, "list the mutations and run nothing")
	only := flag.String("only", "", "comma-separated marker names to run")
	n := flag.Int("sample", 0, "run a fixed sample of this many mutations")
	root := flag.String("root", ".", "repository root")
	jobs := flag.Int("j", runtime.NumCPU(), "mutations to run at once")
	verbose := flag.Bool("v", false, "print the end of each mutation's test output")
	alone := flag.Bool("alone", false, "build every mutation alone (no shared switched build)")
	flag.Parse()

	ms, err := Collect(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(2)
	}
	if *only != "" {
		ms, err = pick(ms, strings.Split(*only, ","))
		if err != nil {
			fmt.Fprintln(os.Stderr, "mutate:", err)
			os.Exit(2)
		}
	}
	ms = sample(ms, *n)
	if *list {
		for _, m := range ms {
			fmt.Printf("%-36s %s:%d %s -> %s\n", m.Name, m.File, m.At, m.Node, strings.Join(m.Pkgs, ","))
		}
		return
	}
	bad, began := 0, time.Now()
	var sw *Switched
	if !*alone {
		sw, err = BuildSwitched(*root, ms, *jobs, func(s string) { fmt.Println(s) })
		if err != nil {
			sw.Close()
			fmt.Fprintln(os.Stderr, "mutate:", err)
			os.Exit(2)
		}
		n := 0
		for _, m := range ms {
			if sw.Has(m) {
				n++
			}
		}
		fmt.Printf("mutate: %d of %d mutations on one switched build per package (%d packages), in %s\n",
			n, len(ms), len(sw.bins), time.Since(began).Round(time.Second))
	}
	// A switched mutation only sets its environment, and any other is its
	// own overlay, so jobs run side by side; the lines come as they finish.
	var mu sync.Mutex
	work := make(chan Mutation)
	var wg sync.WaitGroup
	for range max(*jobs, 1) {
		wg.Go(func() {
			for m := range work {
				t0 := time.Now()
				run := Run
				if sw.Has(m) {
					run = func(root string, m Mutation) (string, string) { return RunSwitched(root, sw, m) }
				}
				verdict, out := run(*root, m)
				mu.Lock()
				fmt.Printf("%-36s %-9s %4.0fs %s:%d %s\n", m.Name, verdict, time.Since(t0).Seconds(), m.File, m.At, m.Node)
				if verdict != "caught" {
					bad++
				}
				if verdict == "BROKEN" || *verbose {
					fmt.Println(indent(tail(out, 12)))
				}
				mu.Unlock()
			}
		})
	}
	for _, m := range ms {
		work <- m
	}
	close(work)
	wg.Wait()
	sw.Close()
	fmt.Printf("mutate: %d mutations, %d caught, %d not, in %s\n", len(ms), len(ms)-bad, bad, time.Since(began).Round(time.Second))
	if bad > 0 {
		os.Exit(1)
	}
}

// Collect derives every marked mutation below root, sorted by name.
// Names must be unique.
func Collect(root string) ([]Mutation, error) {
	var out []Mutation
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "testdata", "node_modules", "vendor", "var", "dist":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !strings.Contains(string(src), "//mutate:") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		ms, err := Derive(rel, src)
		out = append(out, ms...)
		return err
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	for i := 1; i < len(out); i++ {
		if out[i].Name == out[i-1].Name {
			return nil, fmt.Errorf("marker %s is named twice (%s:%d and %s:%d)",
				out[i].Name, out[i-1].File, out[i-1].Line, out[i].File, out[i].Line)
		}
	}
	return out, nil
}

func pick(ms []Mutation, names []string) ([]Mutation, error) {
	by := map[string]Mutation{}
	for _, m := range ms {
		by[m.Name] = m
	}
	var out []Mutation
	for _, n := range names {
		m, ok := by[n]
		if !ok {
			return nil, fmt.Errorf("no marker named %s", n)
		}
		out = append(out, m)
	}
	return out, nil
}

// Run applies one mutation through a `go test -overlay`, so the tree is
// never edited, and runs its packages one at a time: the first package
// that fails has caught it. The verdict is caught, SURVIVED (the tests
// passed), NO-TESTS or BROKEN (it did not build: the marker names the
// wrong node).
func Run(root string, m Mutation) (string, string) {
	dir, overlay, err := overlayFor(root, m)
	defer os.RemoveAll(dir)
	if err != nil {
		return "BROKEN", err.Error()
	}
	var all strings.Builder
	passed := 0
	for _, pkg := range m.Pkgs {
		cmd := exec.Command("go", "test", "-count=1", "-failfast", "-timeout", "300s",
			"-overlay", overlay, "-run", m.Run, pkg)
		cmd.Dir = root
		b, err := cmd.CombinedOutput()
		// A property test that failed under the mutation leaves its
		// counterexample behind; it belongs to the mutation, not the tree.
		_ = exec.Command("git", "-C", root, "clean", "-fdq", "--", ":(glob)**/testdata/rapid/**").Run()
		out := string(b)
		all.WriteString(out)
		switch {
		case err == nil:
			if !ranNothing(out) {
				passed++
			}
			continue
		case strings.Contains(out, "build failed") || strings.Contains(out, "setup failed"):
			return "BROKEN", all.String()
		}
		return "caught", all.String()
	}
	if passed == 0 {
		return "NO-TESTS", all.String()
	}
	return "SURVIVED", all.String()
}

// overlayFor writes m's mutated file and an overlay naming it into a new
// directory, which the caller removes.
func overlayFor(root string, m Mutation) (dir, overlay string, err error) {
	path, err := filepath.Abs(filepath.Join(root, m.File))
	if err != nil {
		return "", "", err
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return "", "", err
	}
	if dir, err = os.MkdirTemp("", "mutate-"); err != nil {
		return "", "", err
	}
	mutated := filepath.Join(dir, filepath.Base(path))
	overlay = filepath.Join(dir, "overlay.json")
	ov, _ := json.Marshal(map[string]map[string]string{"Replace": {path: mutated}})
	if err := os.WriteFile(mutated, m.Apply(src), 0o644); err != nil {
		return dir, "", err
	}
	return dir, overlay, os.WriteFile(overlay, ov, 0o644)
}

// ranNothing says every package's test run matched no test: the
// marker's regex is wrong, so nothing was proved.
func ranNothing(out string) bool {
	oks := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "ok ") {
			oks++
			if !strings.Contains(l, "[no tests to run]") {
				return false
			}
		}
	}
	return oks > 0
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

package main

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const fixture = `package p

var table = map[string][]string{
	//mutate:row-b ./p ^TestRows$
	"b": {"x"},
	"c": {"y"},
}

func f(a, b int, s string) int {
	//mutate:guard ./p,./q ^TestGuard$
	if a > b {
		return 1
	}
	//mutate:flip:negate ./p ^TestFlip$
	if v := a + b; v > 3 {
		return v
	}
	switch {
	//mutate:tagless ./p ^TestSwitch$
	case a == 1, b == 2:
		return 2
	}
	switch s {
	//mutate:tagged ./p ^TestSwitch$
	case "x":
		return 3
	default:
	}
	//mutate:call ./p ^TestCall$
	println(a)
	return 0
}
`

// Each marker's mutation is compared whole, as the text it produces.
func TestDeriveEachKind(t *testing.T) {
	ms, err := Derive("p/p.go", []byte(fixture))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{
		"row-b":   {"\t\"b\": {\"x\"},", ""},
		"guard":   {"if a > b {", "if false && (a > b) {"},
		"flip":    {"if v := a + b; v > 3 {", "if v := a + b; !(v > 3) {"},
		"tagless": {"case a == 1, b == 2:", "case false && ((a == 1) || (b == 2)):"},
		"tagged":  {"\tcase \"x\":\n\t\treturn 3\n", "\n"},
		"call":    {"\tprintln(a)\n", "\t\n"},
	}
	if len(ms) != len(want) {
		t.Fatalf("derived %d mutations, want %d", len(ms), len(want))
	}
	for _, m := range ms {
		w, ok := want[m.Name]
		if !ok {
			t.Fatalf("unexpected mutation %q", m.Name)
		}
		got := string(m.Apply([]byte(fixture)))
		if strings.Count(fixture, w[0]) != 1 {
			t.Fatalf("%s: fixture must hold %q once", m.Name, w[0])
		}
		if exp := strings.Replace(fixture, w[0], w[1], 1); got != exp {
			t.Errorf("%s: mutated source:\n%s\nwant:\n%s", m.Name, got, exp)
		}
	}
	if g := ms[1]; g.Name != "guard" || strings.Join(g.Pkgs, " ") != "./p ./q" || g.Run != "^TestGuard$" || g.Line != 10 {
		t.Errorf("guard marker = %+v", g.Marker)
	}
}

// The switched form of each kind, compared whole: a row and a tagged
// case have none (they build alone).
func TestDeriveSwitchEachKind(t *testing.T) {
	ms, err := Derive("p/p.go", []byte(fixture))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range ms {
		got[m.Name] = m.Switch
	}
	want := map[string]string{
		"row-b":   "",
		"guard":   `!mutateActive_("guard") && (a > b)`,
		"flip":    `mutateActive_("flip") != (v > 3)`,
		"tagless": `!mutateActive_("tagless") && ((a == 1) || (b == 2))`,
		"tagged":  "",
		"call":    "if !mutateActive_(\"call\") {\nprintln(a)\n}",
	}
	if !maps.Equal(got, want) {
		t.Fatalf("switched forms = %q, want %q", got, want)
	}
}

// The structural kinds give one mutation per clause or row, named by
// the code the clause returns or the row's key.
func TestDeriveExpandsCasesAndRows(t *testing.T) {
	src := `package p

//mutate:tbl:rows ./p ^T$
var tbl = map[string]int{
	"a b": 1,
	"c":   2,
}

func g(x int) (bool, string) {
	//mutate:gate:cases ./p ^T$
	switch {
	case x == 1:
		return false, RefuseOne
	case x == 2:
		return false, "two"
	default:
	}
	return true, ""
}
`
	ms, err := Derive("p/p.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.Name)
	}
	if strings.Join(got, " ") != "tbl/a-b tbl/c gate/refuseone gate/2" {
		t.Fatalf("names = %v", got)
	}
	if out := string(ms[2].Apply([]byte(src))); !strings.Contains(out, "case false && ((x == 1)):") {
		t.Fatalf("gate/refuseone:\n%s", out)
	}
	if out := string(ms[0].Apply([]byte(src))); strings.Contains(out, `"a b"`) || !strings.Contains(out, `"c":   2,`) {
		t.Fatalf("tbl/a-b:\n%s", out)
	}
}

// A marker must name something: a stale one fails loudly.
func TestDeriveRefusesAMarkerWithNothingBelow(t *testing.T) {
	src := "package p\n\nfunc f() {\n\t//mutate:lost ./p ^T$\n}\n"
	_, err := Derive("p/p.go", []byte(src))
	if err == nil || !strings.Contains(err.Error(), "p/p.go:4: marker lost: no statement") {
		t.Fatalf("err = %v", err)
	}
	_, err = Derive("p/p.go", []byte("package p\n\n//mutate:Bad name\nvar x = 1\n"))
	if err == nil || !strings.Contains(err.Error(), "malformed marker") {
		t.Fatalf("err = %v", err)
	}
	_, err = Derive("p/p.go", []byte("package p\n\nfunc f() {\n\t//mutate:k:always ./p ^T$\n\tprintln()\n}\n"))
	if err == nil || !strings.Contains(err.Error(), "applies to an if statement only") {
		t.Fatalf("err = %v", err)
	}
}

func TestRanNothing(t *testing.T) {
	if !ranNothing("ok  \tx/p\t0.01s [no tests to run]\n") {
		t.Error("a run that matched nothing was taken as a run")
	}
	if ranNothing("ok  \tx/p\t0.01s [no tests to run]\nok  \tx/q\t0.2s\n") {
		t.Error("a run that tested one package was taken as empty")
	}
}

func TestSampleIsStable(t *testing.T) {
	var ms []Mutation
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		ms = append(ms, Mutation{Marker: Marker{Name: n}})
	}
	a, b := sample(ms, 3), sample(append([]Mutation{ms[4]}, ms[:4]...), 3)
	for i := range a {
		if a[i].Name != b[i].Name {
			t.Fatalf("sample depends on input order: %v vs %v", a, b)
		}
	}
}

const moduleSrc = "package p\n\nfunc Abs(x int) int {\n\t//mutate:neg ./p ^TestAbs$\n\tif x < 0 {\n\t\treturn -x\n\t}\n\treturn x\n}\n\nfunc Two(x int) int {\n\t//mutate:loose ./p ^TestAbs$\n\tif x > 5 {\n\t\treturn 3\n\t}\n\treturn 2\n}\n" +
	"\nvar calls int\n\nfunc Count() int {\n\t//mutate:count ./p ^TestAbs$\n\tcalls++\n\treturn calls\n}\n" +
	"\nfunc Sum(xs []int) int {\n\tt := 0\n\tfor _, x := range xs {\n\t\t//mutate:unused ./p ^TestAbs$\n\t\tt += x\n\t}\n\treturn t\n}\n"

// module writes a throwaway module: package p with moduleSrc and a test
// of Abs, and package q whose marked condition has a named bool type (a
// switch cannot build there).
func module(t *testing.T) string {
	root := t.TempDir()
	files := map[string]string{
		"go.mod":      "module example.com/m\n\ngo 1.22\n",
		"p/p.go":      moduleSrc,
		"p/p_test.go": "package p\n\nimport \"testing\"\n\nfunc TestAbs(t *testing.T) {\n\tif Abs(-2) != 2 || Count() != 1 {\n\t\tt.Fatal(Abs(-2))\n\t}\n}\n",
		"q/q.go":      "package q\n\ntype B bool\n\nfunc Pos(x int) int {\n\tvar neg B = x < 0\n\t//mutate:named ./q ^TestPos$\n\tif neg {\n\t\treturn -x\n\t}\n\treturn x\n}\n",
		"q/q_test.go": "package q\n\nimport \"testing\"\n\nfunc TestPos(t *testing.T) {\n\tif Pos(-2) != 2 {\n\t\tt.Fatal(Pos(-2))\n\t}\n}\n",
	}
	for name, text := range files {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// Run mutates through an overlay: the verdicts come from a real go test
// of a throwaway module, and its file is never edited.
func TestRunVerdictsLeaveTheTreeAlone(t *testing.T) {
	root := module(t)
	ms, err := Collect(root)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range ms {
		got[m.Name], _ = Run(root, m)
	}
	want := map[string]string{"neg": "caught", "loose": "SURVIVED", "named": "caught", "count": "caught", "unused": "BROKEN"}
	if !maps.Equal(got, want) {
		t.Fatalf("verdicts = %v, want %v", got, want)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "p/p.go")); string(b) != moduleSrc {
		t.Fatalf("the file was edited:\n%s", b)
	}
}

// The shared switched build gives each mutation Run's verdict, BROKEN
// included. A package the switch cannot build (q) is left to Run, and
// named in the log.
func TestSwitchedVerdictsAreRuns(t *testing.T) {
	root := module(t)
	ms, err := Collect(root)
	if err != nil {
		t.Fatal(err)
	}
	var log []string
	sw, err := BuildSwitched(root, ms, 2, func(s string) { log = append(log, s) })
	if sw != nil {
		// A failed build still made a work directory to remove.
		t.Cleanup(sw.Close)
	}
	if err != nil {
		t.Fatal(err)
	}
	got, has := map[string]string{}, map[string]bool{}
	for _, m := range ms {
		has[m.Name] = sw.Has(m)
		if sw.Has(m) {
			got[m.Name], _ = RunSwitched(root, sw, m)
		} else {
			got[m.Name], _ = Run(root, m)
		}
	}
	// The removed statement that leaves x unused is BROKEN, though its
	// switched form builds.
	if want := map[string]string{"neg": "caught", "loose": "SURVIVED", "named": "caught", "count": "caught", "unused": "BROKEN"}; !maps.Equal(got, want) {
		t.Fatalf("verdicts = %v, want %v", got, want)
	}
	if want := map[string]bool{"neg": true, "loose": true, "named": false, "count": true, "unused": true}; !maps.Equal(has, want) {
		t.Fatalf("switched = %v, want %v", has, want)
	}
	if len(log) != 1 || !strings.Contains(log[0], "mutate: ./q did not build switched") {
		t.Fatalf("log = %q", log)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "p/p.go")); string(b) != moduleSrc {
		t.Fatalf("the file was edited:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(root, "p", switchFile)); !os.IsNotExist(err) {
		t.Fatalf("the switch file is in the tree: %v", err)
	}
}

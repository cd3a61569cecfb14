package archtest

// Outside text is a type: every field that carries text from a source or
// a model into the store, events, the API and the CLI takes a
// prompt.Text, which only the sanitiser builds (docs/FINDINGS.md#lists-sources-and-outside-text).
// The rule compiles a probe against the module: one function per field
// assigns it a raw string, and each must be refused by the compiler; a
// control assigns it a prompt.Text, and each must compile.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// textSink is one field outside text reaches. Stmt holds %s where the
// value goes; Raw and Safe are the raw and the sanitised value (default
// raw and safe, the probe function's parameters).
type textSink struct {
	Name      string
	Import    string // the package path, relative to the module
	Stmt      string
	Raw, Safe string
}

// textSinks are the module's outside-text fields.
var textSinks = func() []textSink {
	var out []textSink
	for _, f := range []string{"Title", "Description", "Recommendation", "Evidence", "ResourceName", "ResourceNode"} {
		out = append(out, textSink{Name: "findings.Observation." + f, Import: "findings", Stmt: "_ = findings.Observation{" + f + ": %s}"})
	}
	return append(out,
		textSink{Name: "findings.Observation.ResourceTags", Import: "findings", Stmt: "_ = findings.Observation{ResourceTags: %s}",
			Raw: "[]string{raw}", Safe: "[]prompt.Text{safe}"},
		textSink{Name: "records.ApprovalRecord.Reason", Import: "store/records", Stmt: "_ = records.ApprovalRecord{Reason: %s}"},
		textSink{Name: "assistant.Approval.Reason", Import: "assistant", Stmt: "_ = assistant.Approval{Reason: %s}"},
		textSink{Name: "assistant.Transcript.FinalAnswer", Import: "assistant", Stmt: "_ = assistant.Transcript{FinalAnswer: %s}"},
		// The type itself: no literal outside the sanitiser.
		textSink{Name: "prompt.Text", Import: "model/prompt", Stmt: "_ = []prompt.Text{%s}", Raw: "{raw}", Safe: "safe"},
	)
}()

// refusedRaw are the compiler's words for a raw string refused: a type
// mismatch, or the unexported field of prompt.Text.
var refusedRaw = regexp.MustCompile(`^cannot use .* as (\[\])?prompt\.Text value|unexported field`)

// rawTextAccepted compiles probes of sinks against the module in dir
// (module path mod, its sanitiser package at model/prompt) and returns
// the sinks that take a raw string. A control probe that gives every sink
// a prompt.Text must compile, else the error says why.
func rawTextAccepted(dir, mod string, sinks []textSink) ([]string, error) {
	probe := func(raw bool) string {
		imps := []string{mod + "/model/prompt"}
		var body strings.Builder
		for i, s := range sinks {
			imps = append(imps, mod+"/"+s.Import)
			v := cmpOr(s.Safe, "safe")
			if raw {
				v = cmpOr(s.Raw, "raw")
			}
			// Line i+1 of the body holds sink i.
			fmt.Fprintf(&body, "func probe%d(raw string, safe prompt.Text) { "+s.Stmt+"; _, _ = raw, safe }\n", i, v)
		}
		slices.Sort(imps)
		imps = slices.Compact(imps)
		var head strings.Builder
		head.WriteString("package zzrawtextprobe\n\nimport (\n")
		for _, p := range imps {
			head.WriteString("\t" + strconv.Quote(p) + "\n")
		}
		head.WriteString(")\n")
		return head.String() + body.String()
	}
	firstLine := func(src string) int { return strings.Count(src[:strings.Index(src, "func probe0")], "\n") + 1 }

	// The control: every sink takes what the sanitiser builds.
	src := probe(false)
	out, err := buildProbe(dir, src)
	if err != nil {
		errs := sinkErrors(out, firstLine(src))
		var names []string
		for i, s := range sinks {
			if errs[i] != "" {
				names = append(names, s.Name+": "+errs[i])
			}
		}
		return nil, fmt.Errorf("the control probe does not compile (a sink takes no prompt.Text): %v\n%s\n%s", err, strings.Join(names, "\n"), out)
	}
	src = probe(true)
	out, err = buildProbe(dir, src)
	if err == nil {
		out = ""
	}
	errs := sinkErrors(out, firstLine(src))
	var accepted []string
	for i, s := range sinks {
		switch msg := errs[i]; {
		case msg == "":
			accepted = append(accepted, s.Name+" takes a raw string")
		case !refusedRaw.MatchString(msg):
			return nil, fmt.Errorf("the probe of %s failed for another reason: %s", s.Name, msg)
		}
		delete(errs, i)
	}
	if len(errs) > 0 || (err != nil && !strings.Contains(out, "zzrawtextprobe.go:")) {
		return nil, fmt.Errorf("the probe failed outside its sinks:\n%s", out)
	}
	return accepted, nil
}

// sinkErrors maps the index of a probe's sink (its line after first) to
// the compiler's first error on that line.
func sinkErrors(out string, first int) map[int]string {
	errs := map[int]string{}
	for _, line := range strings.Split(out, "\n") {
		m := probeError.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		if _, ok := errs[n-first]; !ok {
			errs[n-first] = m[2]
		}
	}
	return errs
}

// probeError is one compiler error of the probe file: its line, its message.
var probeError = regexp.MustCompile(`zzrawtextprobe\.go:(\d+):\d+: (.*)$`)

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// buildProbe compiles src as a new package of the module in dir through
// an overlay (nothing is written into the tree) and returns the output.
func buildProbe(dir, src string) (string, error) {
	tmp, err := os.MkdirTemp("", "rawtextprobe")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	file := filepath.Join(tmp, "zzrawtextprobe.go")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		return "", err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	ov, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(abs, "zzrawtextprobe", "zzrawtextprobe.go"): file}})
	overlay := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlay, ov, 0o644); err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-overlay", overlay, "-gcflags=-e", "./zzrawtextprobe")
	cmd.Dir = abs
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err = cmd.Run()
	return buf.String(), err
}

// TestOutsideTextIsAType: no outside-text field of the module takes a raw
// string, and each takes a prompt.Text.
func TestOutsideTextIsAType(t *testing.T) {
	got, err := rawTextAccepted("../..", module, textSinks)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("raw strings compile into outside-text fields:\n  %s", strings.Join(got, "\n  "))
	}
	// Every field FINDINGS.md lists (its guard derives the list from the
	// types) is probed here.
	data, err := os.ReadFile("../../docs/FINDINGS.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "<!-- guard:outside-text -->\n")
	if !ok {
		t.Fatal("FINDINGS.md: no guard:outside-text")
	}
	line, _, _ := strings.Cut(rest, "\n")
	listed := regexp.MustCompile("`([A-Za-z]+\\.[A-Za-z]+\\.[A-Za-z]+)`").FindAllStringSubmatch(line, -1)
	if len(listed) == 0 {
		t.Fatal("FINDINGS.md lists no outside-text field")
	}
	for _, m := range listed {
		if !slices.ContainsFunc(textSinks, func(s textSink) bool { return s.Name == m[1] }) {
			t.Errorf("FINDINGS.md lists %s, which no probe tries", m[1])
		}
	}
}

// TestOutsideTextRuleFailsOnViolation: on a throwaway module whose
// observation keeps a string title and whose text type exports its field,
// the rule names exactly those two sinks; a sink that is not a Text at
// all fails the control.
func TestOutsideTextRuleFailsOnViolation(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"go.mod":                 "module example.com/m\n\ngo 1.22\n",
		"model/prompt/prompt.go": "package prompt\n\ntype Text struct{ S string }\n\nfunc Safe(s string) Text { return Text{s} }\n",
		"findings/findings.go":   "package findings\n\nimport \"example.com/m/model/prompt\"\n\ntype Observation struct {\n\tTitle    string\n\tEvidence prompt.Text\n\tCount    int\n}\n",
	})
	sinks := []textSink{
		{Name: "findings.Observation.Title", Import: "findings", Stmt: "_ = findings.Observation{Title: %s}", Safe: "safe.S"},
		{Name: "findings.Observation.Evidence", Import: "findings", Stmt: "_ = findings.Observation{Evidence: %s}"},
		{Name: "prompt.Text", Import: "model/prompt", Stmt: "_ = []prompt.Text{%s}", Raw: "{raw}", Safe: "safe"},
	}
	got, err := rawTextAccepted(dir, "example.com/m", sinks)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"findings.Observation.Title takes a raw string", "prompt.Text takes a raw string"}
	if !slices.Equal(got, want) {
		t.Fatalf("violations = %q, want %q", got, want)
	}
	// A field that takes no Text fails the control, naming the field.
	_, err = rawTextAccepted(dir, "example.com/m", []textSink{{Name: "count", Import: "findings", Stmt: "_ = findings.Observation{Count: %s}"}})
	if err == nil || !strings.Contains(err.Error(), "control probe does not compile") || !strings.Contains(err.Error(), "\ncount: cannot use safe") {
		t.Fatalf("control error = %v, want the control refused on Count", err)
	}
}

// textConstructors are the functions of the sanitiser package that may
// return a prompt.Text: each is SafeText (PlainMemo.Remembered is
// SafeText, with the texts it found plain remembered).
var textConstructors = []string{"Remembered", "Safe", "SafeName", "SafeNames"}

// textMakers lists the functions and methods of the non-test Go files in
// dir that return a Text (or a slice or pointer of them), sorted.
func textMakers(dir string) ([]string, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Type.Results == nil {
				continue
			}
			for _, r := range fn.Type.Results.List {
				if isText(r.Type) {
					out = append(out, fn.Name.Name)
					break
				}
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// isText: the type expression is Text, *Text or []Text.
func isText(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name == "Text"
	case *ast.StarExpr:
		return isText(x.X)
	case *ast.ArrayType:
		return isText(x.Elt)
	}
	return false
}

// TestOnlyTheSanitiserMakesText: model/prompt returns a Text from its
// constructors only, so no other way in skips SafeText.
func TestOnlyTheSanitiserMakesText(t *testing.T) {
	got, err := textMakers("../../model/prompt")
	if err != nil {
		t.Fatal(err)
	}
	if want := slices.Sorted(slices.Values(textConstructors)); !slices.Equal(got, want) {
		t.Fatalf("model/prompt returns a Text from %q, want only %q", got, want)
	}
}

// TestTextMakerRuleFailsOnViolation: a second way to make a Text, a
// method that returns one, are found; tests are not.
func TestTextMakerRuleFailsOnViolation(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"text.go":      "package prompt\n\ntype Text struct{ s string }\n\nfunc Safe(s string, n int) Text { return Text{s} }\n\nfunc Trusted(s string) (Text, error) { return Text{s}, nil }\n",
		"more.go":      "package prompt\n\nfunc (t Text) Upper() *Text { return &t }\n\nfunc All() []Text { return nil }\n\nfunc Name() string { return \"\" }\n",
		"text_test.go": "package prompt\n\nfunc fake() Text { return Text{} }\n",
	})
	got, err := textMakers(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"All", "Safe", "Trusted", "Upper"}; !slices.Equal(got, want) {
		t.Fatalf("makers = %q, want %q", got, want)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/patrold/patrold/patrol"
)

// jsonIndent is what printJSON writes for a value json.Marshal encoded as
// src: json.Indent with two spaces.
func jsonIndent(t testing.TB, src []byte) string {
	var want bytes.Buffer
	if err := json.Indent(&want, src, "", "  "); err != nil {
		t.Fatalf("json.Indent: %v", err)
	}
	return want.String()
}

// TestIndentedIsJSONIndent: a run report printed by `run --output json`
// is what printJSON (an indenting json.Encoder) printed, byte for byte.
// One report has every list empty. The other has strings that hold every
// character the indenter must step over (quotes, escapes, brackets,
// commas and colons in text).
func TestIndentedIsJSONIndent(t *testing.T) {
	var reports []*patrol.Report
	reports = append(reports, &patrol.Report{RunID: "01EMPTY", Resources: map[string]int{}})
	rep := summaryReport()
	rep.StatusReasons = []string{`quote " and \ back`, "brackets [{}], commas, colons: x"}
	rep.Errors = []string{"tab\tnew\nline <html> & \u2028", ""}
	rep.Findings[0].Title = `{"looks": ["like", "json"]}`
	reports = append(reports, rep)
	for _, r := range reports {
		data, err := patrol.MarshalReport(r)
		if err != nil {
			t.Fatal(err)
		}
		var enc bytes.Buffer
		e := json.NewEncoder(&enc)
		e.SetIndent("", "  ")
		if err := e.Encode(r); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		a := &app{stdout: &got}
		if err := a.printRun(r, "json", false); err != nil {
			t.Fatal(err)
		}
		if got.String() != enc.String() {
			t.Errorf("run %s --output json:\n%s\nprintJSON:\n%s", r.RunID, got.String(), enc.String())
		}
		if got := string(appendIndented(nil, data)); got != jsonIndent(t, data) {
			t.Errorf("appendIndented differs from json.Indent:\n%s\nwant:\n%s", got, jsonIndent(t, data))
		}
	}
}

// FuzzIndented: for any value json.Marshal encodes (a string, and the
// string in a list and an object), appendIndented is json.Indent.
func FuzzIndented(f *testing.F) {
	for _, s := range []string{"", `"`, `\`, "[]{},:", `{"a":[]}`, "\u2028<>&", "\x00\x1f"} {
		f.Add(s)
	}
	if data, err := os.ReadFile("../../examples/small-faults.json"); err == nil {
		f.Add(string(data))
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, v := range []any{s, []any{s, []string{}, map[string]any{}, 1.5, nil, true}, map[string]any{s: []any{s, map[string]string{s: s}}}} {
			src, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(appendIndented(nil, src)); got != jsonIndent(t, src) {
				t.Fatalf("%q:\n%s\nwant:\n%s", src, got, jsonIndent(t, src))
			}
		}
		var raw json.RawMessage
		if json.Unmarshal([]byte(s), &raw) == nil {
			var compact bytes.Buffer
			if json.Compact(&compact, raw) == nil {
				if got := string(appendIndented(nil, compact.Bytes())); got != jsonIndent(t, compact.Bytes()) {
					t.Fatalf("%q:\n%s\nwant:\n%s", compact.Bytes(), got, jsonIndent(t, compact.Bytes()))
				}
			}
		}
	})
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestRunScoped: `run --resource` patrols the named resource, its
// parents and children; a later scoped run over a snapshot holding that
// resource alone resolves nothing outside it. Unfit flags exit 2.
func TestRunScoped(t *testing.T) {
	c := newCLI(t, "")
	if out, code := c.run("run", "--snapshot", "../../examples/small-faults.json"); code != 0 {
		t.Fatalf("full run: %d %s", code, out)
	}
	before, _ := c.run("findings", "list")
	data, err := os.ReadFile("../../examples/small-faults.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Version   int               `json:"version"`
		TakenAt   string            `json:"taken_at"`
		Resources []json.RawMessage `json:"resources"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var only []json.RawMessage
	for _, r := range doc.Resources {
		if strings.Contains(string(r), `"id": "vm/102"`) {
			only = append(only, r)
		}
	}
	doc.Resources = only
	one, _ := json.Marshal(doc)
	p := filepath.Join(c.dir, "one.json")
	if err := os.WriteFile(p, one, 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := c.run("run", "--snapshot", p, "--resource", "vm/102", "--reason", "alert fired", "--output", "json")
	if code != 0 {
		t.Fatalf("scoped run: %d %s", code, out)
	}
	var rep struct {
		Scope    map[string]any `json:"scope"`
		Resolved []string       `json:"resolved"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"resources": []any{"vm/102"}, "reason": "alert fired", "patrolled": float64(1)}
	if !reflect.DeepEqual(rep.Scope, want) || len(rep.Resolved) != 0 {
		t.Fatalf("scope %v resolved %v, want %v and nothing resolved", rep.Scope, rep.Resolved, want)
	}
	if after, _ := c.run("findings", "list"); after != before {
		t.Fatalf("findings changed outside the scope:\n%s\nwas\n%s", after, before)
	}
	for _, argv := range [][]string{
		{"run", "--resource", ""},
		{"run", "--reason", "why"},
		{"run", "--resource", "vm/1", "--reason", "a\nb"},
	} {
		if out, code := c.run(argv...); code != 2 {
			t.Errorf("%q: exit %d: %s", argv, code, out)
		}
	}
}

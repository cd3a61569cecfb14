package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// provenanceAttack is one file of testdata/provenance: a patrol attack
// (patrolAttack) whose seed run may have a scripted model of its own, and
// which states every finding held by inhibition after the attack run.
type provenanceAttack struct {
	patrolAttack `yaml:",inline"`
	// SeedTurns, when set, script the model of the seed run.
	SeedTurns any `yaml:"seed_turns"`
	// Held maps every finding stored with inhibited_by ("resource
	// category key") to its parent's id, whole.
	Held map[string]string `yaml:"held"`
}

// TestProvenanceAttacks runs the attacks of issue 37 items 1-3 through
// `patrold run` with a fully compliant scripted model: a model finding
// hides nothing, outranks nothing and is not kept open by insisting.
func TestProvenanceAttacks(t *testing.T) {
	files, err := filepath.Glob("testdata/provenance/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no provenance attacks: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var a provenanceAttack
			if err := yaml.Unmarshal([]byte(expandAttack(t, string(data))), &a); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if a.Attack == "" || a.Item == 0 || a.Expect.Published == nil || a.Expect.ModelFindings == nil || a.Held == nil {
				t.Fatalf("%s: attack, item, expect.published, expect.model_findings and held are required", file)
			}
			runProvenanceAttack(t, &a)
		})
	}
}

func runProvenanceAttack(t *testing.T, a *provenanceAttack) {
	dir := t.TempDir()
	abs := func(p string) string {
		out, err := filepath.Abs(filepath.Join("../..", p))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if a.SeedRun {
		cfg := a.Config
		if a.SeedTurns != nil {
			cfg += "model: {provider: script, script: {path: " + writeScript(t, dir, "seed.yaml", a.SeedTurns) + "}}\n"
		}
		seed := newCLIIn(t, dir, cfg)
		snap := abs(a.Snapshot)
		if a.SeedSnapshot != "" {
			snap = abs(a.SeedSnapshot)
		}
		if out, code := seed.run("run", "--snapshot", snap, "--output", "json"); code != 0 {
			t.Fatalf("seed run: exit %d: %s", code, out)
		}
	}
	c := newCLIIn(t, dir, a.Config+"model: {provider: script, script: {path: "+writeScript(t, dir, "model.yaml", a.Turns)+"}}\n")
	out, code := c.run("run", "--snapshot", abs(a.Snapshot), "--output", "json")
	if code != 0 {
		t.Fatalf("attack run: exit %d: %s", code, out)
	}
	var rep attackReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	if rep.Status != a.Expect.Status || rep.Analysis != "model" {
		t.Errorf("status %q analysis %q, want %q model (reasons %v)", rep.Status, rep.Analysis, a.Expect.Status, rep.StatusReasons)
	}
	checkNetHeld(t, &rep)
	resolved := append([]string{}, rep.Resolved...)
	want := append([]string{}, a.Expect.Resolved...)
	sort.Strings(resolved)
	sort.Strings(want)
	if strings.Join(resolved, ",") != strings.Join(want, ",") {
		t.Errorf("resolved %v, want %v", resolved, want)
	}
	db := openDB(t, c.dir)
	results := toolResults(recording(t, db, rep.RunID))
	for id, want := range a.Expect.Codes {
		if os.Getenv("ATTACK_DUMP") != "" {
			t.Logf("DUMP result %s: %s", id, results[id])
		}
		if got := resultCode(t, results[id]); got != want {
			t.Errorf("call %s: the model saw %q, want %q:\n%s", id, got, want, results[id])
		}
	}
	for id, frag := range a.Expect.Contains {
		if !strings.Contains(results[id], frag) {
			t.Errorf("call %s: result does not contain %q:\n%s", id, frag, results[id])
		}
	}
	rows, err := db.Query(`SELECT resource_id, category, key, inhibited_by FROM findings WHERE inhibited_by != '' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]string{}
	for rows.Next() {
		var res, cat, key, by string
		if err := rows.Scan(&res, &cat, &key, &by); err != nil {
			t.Fatal(err)
		}
		held[res+" "+cat+" "+key] = by
	}
	rows.Close()
	if !maps.Equal(held, a.Held) {
		t.Errorf("held by inhibition\n got %q\nwant %q", held, a.Held)
	}
	checkStoredTextIsSafe(t, db)
	checkWhole(t, &a.patrolAttack, c, db, rep.RunID)
}

func writeScript(t *testing.T, dir, name string, turns any) string {
	t.Helper()
	script, err := yaml.Marshal(map[string]any{"turns": turns})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, script, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

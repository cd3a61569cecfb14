package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/patrol/analyst"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// patrolAttack is one file of patrol/testdata/attacks (see its README).
type patrolAttack struct {
	Attack   string `yaml:"attack"`
	Item     int    `yaml:"item"`
	Snapshot string `yaml:"snapshot"`
	Config   string `yaml:"config"`
	SeedRun  bool   `yaml:"seed_run"`
	Turns    any    `yaml:"turns"`
	Expect   struct {
		Status            string            `yaml:"status"`
		Codes             map[string]string `yaml:"codes"`
		Contains          map[string]string `yaml:"contains"`
		Severity          map[string]string `yaml:"severity"`
		Resolved          []string          `yaml:"resolved"`
		AbsentFromPrompts []string          `yaml:"absent_from_prompts"`
	} `yaml:"expect"`
}

const attacksDir = "../../patrol/testdata/attacks"

// TestPatrolAttacks runs every patrol attack through `patrold run` with a
// fully compliant scripted model and checks that the harm was prevented.
func TestPatrolAttacks(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(attacksDir, "p*.yaml"))
	if err != nil || len(files) < 12 {
		t.Fatalf("want at least 12 patrol attacks, found %d (%v)", len(files), err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			var a patrolAttack
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal([]byte(expandAttack(t, string(data))), &a); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if a.Attack == "" || a.Item == 0 || a.Snapshot == "" || a.Expect.Status == "" {
				t.Fatalf("%s: attack, item, snapshot and expect.status are required", file)
			}
			runPatrolAttack(t, &a)
		})
	}
}

var (
	idMacro     = regexp.MustCompile(`\$id\(([^,)]+),([^,)]+),([^,)]+)\)`)
	repeatMacro = regexp.MustCompile(`\$repeat\(([^,)]+),(\d+)\)`)
)

func expandAttack(t *testing.T, s string) string {
	s = idMacro.ReplaceAllStringFunc(s, func(m string) string {
		p := idMacro.FindStringSubmatch(m)
		return findings.ID(p[1], findings.Category(p[2]), p[3])
	})
	s = repeatMacro.ReplaceAllStringFunc(s, func(m string) string {
		p := repeatMacro.FindStringSubmatch(m)
		n, _ := strconv.Atoi(p[2])
		return strings.Repeat(p[1], n)
	})
	words := strings.Fields(analyst.Policy)
	if len(words) < 8 {
		t.Fatal("the patrol policy has fewer than eight words")
	}
	return strings.ReplaceAll(s, "$policy", strings.Join(words[:8], " "))
}

func runPatrolAttack(t *testing.T, a *patrolAttack) {
	dir := t.TempDir()
	snap, err := filepath.Abs(filepath.Join("../..", a.Snapshot))
	if err != nil {
		t.Fatal(err)
	}
	if a.SeedRun { // the findings an attack wants to hide or resolve exist already
		seed := newCLIIn(t, dir, a.Config)
		if out, code := seed.run("run", "--snapshot", snap, "--output", "json"); code != 0 {
			t.Fatalf("seed run: exit %d: %s", code, out)
		}
	}
	script, err := yaml.Marshal(map[string]any{"turns": a.Turns})
	if err != nil {
		t.Fatal(err)
	}
	scriptPath := filepath.Join(dir, "model.yaml")
	if err := os.WriteFile(scriptPath, script, 0o600); err != nil {
		t.Fatal(err)
	}
	c := newCLIIn(t, dir, a.Config+"model: {provider: script, script: {path: "+scriptPath+"}}\n")
	out, code := c.run("run", "--snapshot", snap, "--output", "json")
	if code != 0 {
		t.Fatalf("attack run: exit %d: %s", code, out)
	}
	var rep attackReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	if rep.Status != a.Expect.Status {
		t.Errorf("status %q, want %q (reasons %v)", rep.Status, a.Expect.Status, rep.StatusReasons)
	}
	if rep.Analysis != "model" {
		t.Errorf("analysis %q: the model stages did not run", rep.Analysis)
	}
	checkNetHeld(t, &rep)
	resolved := append([]string{}, rep.Resolved...)
	sort.Strings(resolved)
	want := append([]string{}, a.Expect.Resolved...)
	sort.Strings(want)
	if strings.Join(resolved, ",") != strings.Join(want, ",") {
		t.Errorf("resolved %v, want %v", resolved, want)
	}
	db := openDB(t, c.dir)
	for ref, sev := range a.Expect.Severity {
		p := strings.Fields(ref)
		id := findings.ID(p[0], findings.Category(p[1]), p[2])
		var got, status string
		if err := db.QueryRow("SELECT severity, status FROM findings WHERE id = ?", id).Scan(&got, &status); err != nil {
			t.Errorf("finding %s (%s): %v", ref, id, err)
			continue
		}
		if got != sev || status != string(findings.StatusActive) {
			t.Errorf("finding %s (%s): %s %s, want active %s", ref, id, status, got, sev)
		}
	}
	rec := recording(t, db, rep.RunID)
	results := toolResults(rec)
	for id, want := range a.Expect.Codes {
		res, ok := results[id]
		if !ok {
			t.Errorf("call %s: the model saw no result", id)
			continue
		}
		if got := resultCode(t, res); got != want {
			t.Errorf("call %s: the model saw %q, want %q:\n%s", id, got, want, res)
		}
	}
	for id, frag := range a.Expect.Contains {
		if !strings.Contains(results[id], frag) {
			t.Errorf("call %s: result does not contain %q:\n%s", id, frag, results[id])
		}
	}
	for _, ex := range rec.Exchanges {
		for _, m := range ex.Request.Messages {
			if m.Role == model.RoleAssistant {
				continue // the model's own words
			}
			for _, live := range a.Expect.AbsentFromPrompts {
				if strings.Contains(m.Content, live) {
					t.Errorf("request %d carries %q live in a %s message:\n%s", ex.Seq, live, m.Role, m.Content)
				}
			}
		}
	}
	checkStoredTextIsSafe(t, db)
}

type attackReport struct {
	RunID         string           `json:"run_id"`
	Status        string           `json:"status"`
	StatusReasons []string         `json:"status_reasons"`
	Analysis      string           `json:"analysis"`
	RawSignals    []map[string]any `json:"signals"`
	Findings      []struct {
		ID         string `json:"id"`
		Key        string `json:"key"`
		ResourceID string `json:"resource_id"`
		Category   string `json:"category"`
		Severity   string `json:"severity"`
		Change     string `json:"change"`
		Title      string `json:"title"`
	} `json:"findings"`
	Resolved []string `json:"resolved"`
}

// checkNetHeld: every signal has a finding of this run on its resource and
// category with at least its severity, and nothing whose signal is
// present was resolved.
func checkNetHeld(t *testing.T, rep *attackReport) {
	t.Helper()
	if len(rep.RawSignals) == 0 {
		t.Fatal("the run detected no signals; the attack tests nothing")
	}
	resolved := map[string]bool{}
	for _, id := range rep.Resolved {
		resolved[id] = true
	}
	for _, s := range rep.RawSignals {
		typ, res, cat, sev := s["type"].(string), s["resource_id"].(string), s["category"].(string), s["severity"].(string)
		covered := false
		for _, f := range rep.Findings {
			if snapshot.CanonicalID(f.ResourceID) == snapshot.CanonicalID(res) && f.Category == cat &&
				signals.SeverityRank(f.Severity) >= signals.SeverityRank(sev) && f.Change != string(findings.ChangeResolved) {
				covered = true
			}
		}
		if !covered {
			t.Errorf("signal %s on %s (%s) has no open finding of at least its severity in %+v", typ, res, sev, rep.Findings)
		}
		if id := findings.ID(res, findings.Category(cat), typ); resolved[id] {
			t.Errorf("finding %s resolved while its signal %s on %s is present", id, typ, res)
		}
	}
}

func openDB(t *testing.T, dir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "var", "patrold.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func recording(t *testing.T, db *sql.DB, runID string) model.Recording {
	t.Helper()
	var raw string
	if err := db.QueryRow("SELECT exchange FROM runs WHERE id = ?", runID).Scan(&raw); err != nil {
		t.Fatalf("exchange of %s: %v", runID, err)
	}
	var rec model.Recording
	if err := json.Unmarshal([]byte(raw), &rec); err != nil || len(rec.Exchanges) == 0 {
		t.Fatalf("exchange of %s: %v (%d exchanges)", runID, err, len(rec.Exchanges))
	}
	return rec
}

// toolResults maps tool call ids to the last result text the model saw.
func toolResults(rec model.Recording) map[string]string {
	out := map[string]string{}
	for _, ex := range rec.Exchanges {
		for _, m := range ex.Request.Messages {
			if m.Role == model.RoleTool {
				out[m.ToolCallID] = m.Content
			}
		}
	}
	return out
}

// resultCode is "ok", "CODE" or "CODE/reason" of a fenced tool result.
func resultCode(t *testing.T, fenced string) string {
	t.Helper()
	lines := strings.Split(fenced, "\n")
	if len(lines) < 3 {
		return "unfenced"
	}
	var res struct {
		OK    bool `json:"ok"`
		Error *struct {
			Code    string `json:"code"`
			Details struct {
				Reason string `json:"reason"`
			} `json:"details"`
		} `json:"error"`
	}
	body := strings.Join(lines[1:len(lines)-1], "\n")
	if err := json.Unmarshal([]byte(body), &res); err != nil {
		t.Fatalf("tool result is not JSON: %v\n%s", err, body)
	}
	switch {
	case res.Error == nil && res.OK:
		return "ok"
	case res.Error == nil:
		return "not ok, no error"
	case res.Error.Details.Reason != "":
		return res.Error.Code + "/" + res.Error.Details.Reason
	}
	return res.Error.Code
}

// checkStoredTextIsSafe: no finding row and no outbox event holds a live
// instruction-like span.
func checkStoredTextIsSafe(t *testing.T, db *sql.DB) {
	t.Helper()
	rows, err := db.Query(`SELECT id, title, description, recommendation, evidence, resource_name FROM findings`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id string
		texts := make([]string, 5)
		if err := rows.Scan(&id, &texts[0], &texts[1], &texts[2], &texts[3], &texts[4]); err != nil {
			t.Fatal(err)
		}
		n++
		for _, s := range texts {
			if res := (*prompt.Neutraliser)(nil).Neutralise(s); res.Changed() {
				t.Errorf("finding %s stores live text %v: %q", id, res.Counts, s)
			}
		}
	}
	if err := rows.Err(); err != nil || n == 0 {
		t.Fatalf("findings: %v (%d rows)", err, n)
	}
	ev, err := db.Query(`SELECT seq, data FROM outbox`)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	for ev.Next() {
		var seq int
		var data []byte
		if err := ev.Scan(&seq, &data); err != nil {
			t.Fatal(err)
		}
		if res := (*prompt.Neutraliser)(nil).NeutraliseDocument(string(data)); res.Changed() {
			t.Errorf("outbox event %d carries live text %v: %s", seq, res.Counts, data)
		}
	}
	if err := ev.Err(); err != nil {
		t.Fatal(err)
	}
}

// newCLIIn is newCLI on a given directory, so two commands share a store.
func newCLIIn(t *testing.T, dir, extra string) *cli {
	cfg := filepath.Join(dir, fmt.Sprintf("patrold-%d.yaml", len(extra)))
	extra += "http: {listen: '127.0.0.1:1'}\n"
	if err := os.WriteFile(cfg, []byte("data_dir: "+filepath.Join(dir, "var")+"\n"+extra), 0o600); err != nil {
		t.Fatal(err)
	}
	return &cli{t: t, cfg: cfg, dir: dir}
}

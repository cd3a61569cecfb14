package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

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
	// SeedSnapshot, when set, is the snapshot of the seed run (the fleet
	// as it was before the attack run).
	SeedSnapshot string `yaml:"seed_snapshot"`
	Turns        any    `yaml:"turns"`
	Expect       struct {
		// ModelFindings is the whole set of model findings stored after
		// the run, each "resource category key severity status".
		ModelFindings *[]string `yaml:"model_findings"`
		// Stored holds whole rows of findings ("resource category key").
		Stored map[string]storedRow `yaml:"stored"`
		// Published is the whole list of finding events the attack run
		// wrote, each "event resource key severity source", in order.
		Published *[]string `yaml:"published"`
		// Printed are texts the CLI's text output (runs show, findings
		// list, findings show of every stored row) must hold.
		Printed []string `yaml:"printed"`
		// ListFirst are the first rows of `findings list`, "resource key".
		ListFirst []string `yaml:"list_first"`
		// Capped is the run report's model_findings_capped.
		Capped            int               `yaml:"capped"`
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
	if err != nil || len(files) < 40 {
		t.Fatalf("want at least 40 patrol attacks, found %d (%v)", len(files), err)
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
			if name >= "p15" && (a.Expect.Published == nil || (a.Expect.ModelFindings == nil && a.Expect.Stored == nil)) {
				t.Fatalf("%s: expect.published and expect.model_findings or expect.stored are required (whole values)", file)
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
		seedSnap := snap
		if a.SeedSnapshot != "" {
			if seedSnap, err = filepath.Abs(filepath.Join("../..", a.SeedSnapshot)); err != nil {
				t.Fatal(err)
			}
		}
		if out, code := seed.run("run", "--snapshot", seedSnap, "--output", "json"); code != 0 {
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
	if rep.ModelFindingsCapped != a.Expect.Capped {
		t.Errorf("model_findings_capped %d, want %d", rep.ModelFindingsCapped, a.Expect.Capped)
	}
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
	checkWhole(t, a, c, db, rep.RunID)
}

// storedRow is a finding row as an attack expects it, whole.
type storedRow struct {
	Severity       string `yaml:"severity"`
	Source         string `yaml:"source"`
	Status         string `yaml:"status"`
	ResolveReason  string `yaml:"resolve_reason"`
	Title          string `yaml:"title"`
	Description    string `yaml:"description"`
	Recommendation string `yaml:"recommendation"`
	Evidence       string `yaml:"evidence"`
}

// checkWhole compares what was stored, published and printed with the
// attack's whole expected values, and checks that no printed text holds
// a character a terminal would act on.
func checkWhole(t *testing.T, a *patrolAttack, c *cli, db *sql.DB, runID string) {
	t.Helper()
	if a.Expect.ModelFindings != nil {
		rows, err := db.Query(`SELECT resource_id, category, key, severity, status FROM findings WHERE source = 'model' ORDER BY resource_id, category, key`)
		if err != nil {
			t.Fatal(err)
		}
		got := []string{}
		for rows.Next() {
			var f [5]string
			if err := rows.Scan(&f[0], &f[1], &f[2], &f[3], &f[4]); err != nil {
				t.Fatal(err)
			}
			got = append(got, strings.Join(f[:], " "))
		}
		rows.Close()
		want := append([]string{}, *a.Expect.ModelFindings...)
		sort.Strings(want)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("model findings stored\n got %q\nwant %q", got, want)
		}
	}
	var shown []string
	for ref, want := range a.Expect.Stored {
		p := strings.Fields(ref)
		id := findings.ID(p[0], findings.Category(p[1]), p[2])
		var got storedRow
		if err := db.QueryRow(`SELECT severity, source, status, resolve_reason, title, description, recommendation, evidence FROM findings WHERE id = ?`, id).
			Scan(&got.Severity, &got.Source, &got.Status, &got.ResolveReason, &got.Title, &got.Description, &got.Recommendation, &got.Evidence); err != nil {
			t.Errorf("finding %s: %v", ref, err)
			continue
		}
		if got != want {
			t.Errorf("finding %s stored\n got %+v\nwant %+v", ref, got, want)
		}
		shown = append(shown, id)
	}
	if os.Getenv("ATTACK_DUMP") != "" {
		t.Logf("DUMP published %q", publishedBy(t, db, runID))
		rows, _ := db.Query(`SELECT resource_id, category, key, severity, source, status, resolve_reason, title, description, recommendation, evidence FROM findings`)
		for rows.Next() {
			var f [11]string
			_ = rows.Scan(&f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8], &f[9], &f[10])
			t.Logf("DUMP row %q", f)
		}
		rows.Close()
	}
	if a.Expect.Published != nil {
		got := publishedBy(t, db, runID)
		if strings.Join(got, "\n") != strings.Join(*a.Expect.Published, "\n") {
			t.Errorf("published by the run\n got %q\nwant %q", got, *a.Expect.Published)
		}
	}
	var printed strings.Builder
	for _, argv := range append([][]string{{"runs", "show", runID}, {"findings", "list", "--state", "all"}}, showArgs(shown)...) {
		out, code := c.run(argv...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", argv, code, out)
		}
		if argv[1] == "list" && len(a.Expect.ListFirst) > 0 {
			checkListFirst(t, out, a.Expect.ListFirst)
		}
		printed.WriteString(out)
	}
	for _, r := range printed.String() {
		if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r < 0xa0) || unicode.Is(unicode.Cf, r) {
			t.Errorf("the CLI printed %U live:\n%s", r, printed.String())
			break
		}
	}
	for _, want := range a.Expect.Printed {
		if !strings.Contains(printed.String(), want) {
			t.Errorf("the CLI did not print %q:\n%s", want, printed.String())
		}
	}
}

func showArgs(ids []string) [][]string {
	sort.Strings(ids)
	var out [][]string
	for _, id := range ids {
		out = append(out, []string{"findings", "show", id})
	}
	return out
}

// checkListFirst: the first rows of the text list, "resource key".
func checkListFirst(t *testing.T, out string, want []string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	key, res := slices.Index(strings.Fields(lines[0]), "KEY"), slices.Index(strings.Fields(lines[0]), "RESOURCE")
	if key < 0 || res < 0 {
		t.Fatalf("findings list has no KEY and RESOURCE columns:\n%s", out)
	}
	var got []string
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) > max(key, res) {
			got = append(got, f[res]+" "+f[key])
		}
		if len(got) == len(want) {
			break
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings list starts\n got %q\nwant %q\n%s", got, want, out)
	}
}

// publishedBy lists the finding events of run runID in the outbox,
// "event resource key severity source", in order.
func publishedBy(t *testing.T, db *sql.DB, runID string) []string {
	t.Helper()
	rows, err := db.Query(`SELECT type, data FROM outbox ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := []string{}
	for rows.Next() {
		var typ string
		var data []byte
		if err := rows.Scan(&typ, &data); err != nil {
			t.Fatal(err)
		}
		var ev struct {
			Data findings.FindingEventData `json:"data"`
			findings.FindingEventData
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatalf("outbox event: %v", err)
		}
		d := ev.FindingEventData
		if d.Finding.ID == "" {
			d = ev.Data
		}
		if d.Finding.ID == "" || d.RunID != runID {
			continue
		}
		f := d.Finding
		got = append(got, strings.Join([]string{typ[strings.LastIndexByte(typ, '.')+1:], f.ResourceID, f.Key, string(f.Severity), string(f.Source)}, " "))
	}
	return got
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
	Resolved            []string `json:"resolved"`
	ModelFindingsCapped int      `json:"model_findings_capped"`
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

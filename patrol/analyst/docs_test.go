package analyst_test

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/patrol/analyst"
	"github.com/patrold/patrold/signals"
)

// docConstants are the constants docs/MODEL_STAGES.md must state, with
// their values read from the code.
var docConstants = map[string]float64{
	"MinContextWindow": analyst.MinContextWindow, "DefaultContextWindow": analyst.DefaultContextWindow,
	"DefaultMaxOutputTokens": analyst.DefaultMaxOutputTokens, "DefaultListLimit": analyst.DefaultListLimit,
	"MaxListLimit": analyst.MaxListLimit, "MaxTitleChars": analyst.MaxTitleChars, "MaxTextChars": analyst.MaxTextChars,
	"MaxNameRunes": prompt.MaxNameRunes, "MaxErrorRunes": signals.MaxErrorRunes,
	"DefaultMaxModelFindingsPerRun": analyst.DefaultMaxModelFindingsPerRun, "DefaultMaxModelFindingsPerResource": analyst.DefaultMaxModelFindingsPerResource,
}

func init() {
	for k, v := range sourceConstants("limits.go") {
		docConstants[k] = v
	}
}

// sourceConstants are the constants declared in a file of this package
// with a literal value, read from its source: the stage limits are not
// exported only so the guard can see them.
func sourceConstants(file string) map[string]float64 {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		panic(err)
	}
	out := map[string]float64{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, sp := range g.Specs {
			vs := sp.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
					v, _ := constant.Float64Val(constant.ToFloat(constant.MakeFromLiteral(lit.Value, lit.Kind, 0)))
					out[n.Name] = v
				}
			}
		}
	}
	return out
}

// TestSourceConstantsReadsTheLimits: the source reader finds every limit
// (a literal it missed would drop out of the guard in both directions).
func TestSourceConstantsReadsTheLimits(t *testing.T) {
	got := slices.Sorted(maps.Keys(sourceConstants("limits.go")))
	want := []string{"detectionTurnsBase", "detectionTurnsMax", "detectionTurnsMin", "detectionTurnsPerFlag",
		"evaluationTurns", "seedContextPercent", "sweepTurnsExtra", "sweepTurnsMax", "watchMargin"}
	if !slices.Equal(got, want) {
		t.Fatalf("limits.go constants %v, want %v", got, want)
	}
}

// The name cap is one figure: detection clips names at the length the
// neutraliser caps them at.
func TestNameCapsAgree(t *testing.T) {
	if signals.MaxNameRunes != prompt.MaxNameRunes {
		t.Fatalf("signals.MaxNameRunes %d, prompt.MaxNameRunes %d", signals.MaxNameRunes, prompt.MaxNameRunes)
	}
}

// TestDocSeverityRanks: the ranks docs/MODEL_STAGES.md gives for matching
// are those of signals.SeverityRank.
func TestDocSeverityRanks(t *testing.T) {
	var parts []string
	for _, s := range []string{"info", "watch", "warning", "critical"} {
		parts = append(parts, s+" "+strconv.Itoa(signals.SeverityRank(s)))
	}
	want := "(`signals.SeverityRank`: " + strings.Join(parts, ", ") + ")"
	if doc := strings.Join(strings.Fields(strings.Join(readDoc(t), " ")), " "); !strings.Contains(doc, want) {
		t.Errorf("docs/MODEL_STAGES.md does not state the severity ranks as %q", want)
	}
}

var (
	constRow = regexp.MustCompile("^\\| `([A-Za-z]+)` \\| ([0-9.]+) \\|")
	toolRow  = regexp.MustCompile("^\\| `([a-z_]+)` \\| ([a-z_]+) \\| ([^|]+) \\| ([^|]+) \\|")
)

func readDoc(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "MODEL_STAGES.md"))
	if err != nil {
		t.Fatalf("docs/MODEL_STAGES.md: %v", err) // a missing doc fails, never skips
	}
	return strings.Split(string(data), "\n")
}

// checkConstants compares the guarded constants table with the code, in
// both directions.
func checkConstants(lines []string, want map[string]float64) []string {
	var problems []string
	seen := map[string]bool{}
	in := false
	for _, l := range lines {
		if strings.Contains(l, "<!-- guard:constants -->") {
			in = true
			continue
		}
		m := constRow.FindStringSubmatch(l)
		if !in || m == nil {
			continue
		}
		v, _ := strconv.ParseFloat(m[2], 64)
		code, ok := want[m[1]]
		switch {
		case !ok:
			problems = append(problems, m[1]+" is documented but is not a guarded constant")
		case code != v:
			problems = append(problems, m[1]+": the doc says "+m[2]+", the code "+strconv.FormatFloat(code, 'g', -1, 64))
		}
		seen[m[1]] = true
	}
	for name := range want {
		if !seen[name] {
			problems = append(problems, name+" is missing from the constants table")
		}
	}
	sort.Strings(problems)
	return problems
}

func TestDocConstants(t *testing.T) {
	for _, p := range checkConstants(readDoc(t), docConstants) {
		t.Error("docs/MODEL_STAGES.md: " + p)
	}
}

// The guard fails when the code changes under it.
func TestDocConstantsGuardBites(t *testing.T) {
	changed := map[string]float64{}
	for k, v := range docConstants {
		changed[k] = v
	}
	changed["evaluationTurns"]++
	changed["NewConstant"] = 1
	delete(changed, "sweepTurnsMax")
	got := checkConstants(readDoc(t), changed)
	if len(got) != 3 {
		t.Errorf("guard found %v, want three problems", got)
	}
}

// The tools table matches the registry's classification and the profiles.
func TestDocTools(t *testing.T) {
	profiles := analyst.Profiles()
	documented := map[string]bool{}
	for _, l := range readDoc(t) {
		m := toolRow.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		name, kind, target := m[1], m[2], strings.Trim(strings.TrimSpace(m[3]), "`")
		documented[name] = true
		k, tg, ok := analyst.Classify(name)
		if !ok {
			t.Errorf("%s is documented but is not a stage tool", name)
			continue
		}
		if k.String() != kind || (target != "-" && string(tg) != target) || (target == "-" && tg != "") {
			t.Errorf("%s: doc says %s/%s, registry %s/%s", name, kind, target, k, tg)
		}
		var in []string
		for _, stage := range []string{analyst.StageDetection, analyst.StageEvaluation, analyst.StageAssessment} {
			if profiles[stage].Advertises(name) {
				in = append(in, stage)
			}
		}
		if got := strings.Join(in, ", "); got != strings.TrimSpace(m[4]) {
			t.Errorf("%s: doc profiles %q, code %q", name, strings.TrimSpace(m[4]), got)
		}
	}
	for _, p := range profiles {
		for _, name := range p.Tools {
			if !documented[name] {
				t.Errorf("%s is not in the tools table", name)
			}
		}
	}
	if !slices.Equal(analyst.Profiles()[analyst.StageDetection].Tools, []string{
		analyst.ToolListResources, analyst.ToolGetResource, analyst.ToolListFindings, analyst.ToolReportFinding, analyst.ToolAssessFinding,
	}) {
		t.Errorf("detection profile %v", analyst.Profiles()[analyst.StageDetection].Tools)
	}
}

var familyRow = regexp.MustCompile("^\\| `([a-z_]+)` \\| (.+) \\|$")

// docFamilies is what docs/MODEL_STAGES.md states of the quantity
// families (the table after guard:families) and the threshold words.
func docFamilies(lines []string) (map[string][]string, []string) {
	fams := map[string][]string{}
	var thresholds []string
	in := false
	for _, l := range lines {
		switch {
		case strings.Contains(l, "<!-- guard:families -->"):
			in = true
		case in && familyRow.MatchString(l):
			m := familyRow.FindStringSubmatch(l)
			fams[m[1]] = backticked(m[2])
		case strings.HasPrefix(l, "Threshold words: "):
			thresholds = backticked(l)
			in = false
		}
	}
	return fams, thresholds
}

func backticked(s string) []string {
	var out []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	sort.Strings(out)
	return out
}

// checkFamilies compares the doc with the code, both ways.
func checkFamilies(lines []string, fams map[string][]string, thresholds []string) []string {
	docFams, docTh := docFamilies(lines)
	var problems []string
	for f, words := range fams {
		words = slices.Sorted(slices.Values(words))
		if got, ok := docFams[f]; !ok {
			problems = append(problems, "family "+f+" is missing")
		} else if !slices.Equal(got, words) {
			problems = append(problems, "family "+f+": the doc says "+strings.Join(got, ",")+", the code "+strings.Join(words, ","))
		}
	}
	for f := range docFams {
		if _, ok := fams[f]; !ok {
			problems = append(problems, "family "+f+" is documented but not in the code")
		}
	}
	if th := slices.Sorted(slices.Values(thresholds)); !slices.Equal(docTh, th) {
		problems = append(problems, "threshold words: the doc says "+strings.Join(docTh, ",")+", the code "+strings.Join(th, ","))
	}
	sort.Strings(problems)
	return problems
}

// TestDocFamilies: the families and threshold words of grounding are
// documented exactly as the code has them.
func TestDocFamilies(t *testing.T) {
	for _, p := range checkFamilies(readDoc(t), analyst.FamilyWords(), analyst.ThresholdWords()) {
		t.Error("docs/MODEL_STAGES.md: " + p)
	}
}

// The families guard fails when the code changes under it.
func TestDocFamiliesGuardBites(t *testing.T) {
	fams := analyst.FamilyWords()
	fams["memory"] = append(fams["memory"], "heap")
	fams["gpu"] = []string{"gpu"}
	delete(fams, "window")
	got := checkFamilies(readDoc(t), fams, append(analyst.ThresholdWords(), "ceiling"))
	if len(got) != 4 {
		t.Errorf("guard found %v, want four problems", got)
	}
}

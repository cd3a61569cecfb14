package deploy_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// dashboard is the part of a Grafana dashboard the checks read.
type dashboard struct {
	Title  string `json:"title"`
	UID    string `json:"uid"`
	Panels []struct {
		ID      int    `json:"id"`
		Title   string `json:"title"`
		Type    string `json:"type"`
		GridPos *struct {
			W, H int
		} `json:"gridPos"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// dashboardExprs decodes the dashboard and returns its PromQL by panel,
// with a problem list for anything malformed.
func dashboardExprs(text string) (map[string]string, []string) {
	var d dashboard
	if err := json.Unmarshal([]byte(text), &d); err != nil {
		return nil, []string{"not JSON: " + err.Error()}
	}
	var p []string
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		p = append(p, "title, uid and panels are required")
	}
	exprs := map[string]string{}
	ids := map[int]bool{}
	for _, pn := range d.Panels {
		if ids[pn.ID] {
			p = append(p, fmt.Sprintf("panel id %d used twice", pn.ID))
		}
		ids[pn.ID] = true
		if pn.GridPos == nil || pn.GridPos.W == 0 || pn.GridPos.H == 0 || pn.Title == "" || pn.Type == "" {
			p = append(p, fmt.Sprintf("panel %d: title, type and gridPos are required", pn.ID))
		}
		if len(pn.Targets) == 0 {
			p = append(p, fmt.Sprintf("panel %d %q has no query", pn.ID, pn.Title))
		}
		for _, tg := range pn.Targets {
			exprs[fmt.Sprintf("panel_%d_%s", pn.ID, tg.RefID)] = tg.Expr
		}
	}
	return exprs, p
}

// grafanaVars are stand-ins for the dashboard variables, so promtool can
// parse the queries.
var grafanaVars = strings.NewReplacer("$__range", "1d", "$__rate_interval", "5m", "$job", ".*", "$instance", ".*")

// TestDashboard checks the dashboard's shape and compiles every query with
// promtool (as recording rules).
func TestDashboard(t *testing.T) {
	exprs, problems := dashboardExprs(read(t, "grafana-dashboard.json"))
	for _, p := range problems {
		t.Error(p)
	}
	if _, p := dashboardExprs(`{"title": "x", "uid": "x", "panels": [{"id": 1, "title": "a", "type": "stat", "gridPos": {"w": 1, "h": 1}}]}`); len(p) == 0 {
		t.Error("a panel without a query was not reported")
	}
	bin := tool(t, "promtool")
	names := make([]string, 0, len(exprs))
	for n := range exprs {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for _, n := range names {
		q, _ := json.Marshal(grafanaVars.Replace(exprs[n]))
		fmt.Fprintf(&b, "      - record: dashboard:%s\n        expr: %s\n", n, q)
	}
	path := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "check", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("a dashboard query does not parse: %v\n%s", err, out)
	}
}

var metricName = regexp.MustCompile(`patrold_[a-z0-9_]*[a-z0-9]`)

// exportedMetrics collects the "patrold_..." string literals of the
// daemon's Go sources (tests excluded).
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	lit := regexp.MustCompile(`"(patrold_[a-z0-9_]+)"`)
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != ".." && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range lit.FindAllStringSubmatch(string(b), -1) {
			out[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMetricNamesExist: every patrold_ metric the rules, the dashboard and
// the patrol docs name is exported by the code.
func TestMetricNamesExist(t *testing.T) {
	code := exportedMetrics(t)
	if !code["patrold_patrol_runs_total"] {
		t.Fatal("the source scan found no patrol metrics")
	}
	for _, file := range []string{"prometheus-rules.yml", "grafana-dashboard.json", "../docs/PATROL_ARCHITECTURE.md", "../docs/PERFORMANCE.md", "../docs/CONFIGURATION.md"} {
		text := read(t, file)
		// Alert names and bucket names are not metric names.
		for _, name := range metricName.FindAllString(text, -1) {
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
			if !code[name] && !code[base] {
				t.Errorf("%s names %s, which no package exports", file, name)
			}
		}
	}
}

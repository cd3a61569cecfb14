package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
)

// patrolDocConst is one evaluated constant: its canonical value ("3",
// "10m0s", "high_cpu"), its declared type name and whether it is a string.
type patrolDocConst struct {
	Value, Type string
	IsString    bool
}

// patrolDocTruth is what the signals, alerts, findings, store and patrol sources
// say, per package.
type patrolDocTruth struct {
	Consts     map[string]map[string]patrolDocConst // package -> name -> constant
	Categories map[string]string                    // signal type value -> category value
}

// patrolDocPackages are the packages the guard reads (directory names).
var patrolDocPackages = []string{"signals", "alerts", "findings", "store", "patrol"}

// readPatrolDocTruth parses the sources (package -> file name -> text).
func readPatrolDocTruth(src map[string]map[string]string) (patrolDocTruth, error) {
	t := patrolDocTruth{Consts: map[string]map[string]patrolDocConst{}, Categories: map[string]string{}}
	fset := token.NewFileSet()
	var categoryFunc *ast.FuncDecl
	for _, pkg := range patrolDocPackages {
		raw := map[string]*ast.ValueSpec{}
		types := map[string]string{}
		for name, text := range src[pkg] {
			f, err := parser.ParseFile(fset, name, text, parser.SkipObjectResolution)
			if err != nil {
				return t, err
			}
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && pkg == "signals" && fd.Name.Name == "Category" && fd.Recv != nil {
					categoryFunc = fd
				}
				gd, ok := d.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for _, id := range vs.Names {
						raw[id.Name] = vs
						if tid, ok := vs.Type.(*ast.Ident); ok {
							types[id.Name] = tid.Name
						}
					}
				}
			}
		}
		t.Consts[pkg] = patrolDocEvalAll(raw, types)
	}
	if categoryFunc == nil {
		return t, fmt.Errorf("signals: no Type.Category method")
	}
	t.Categories = patrolDocCategories(categoryFunc, t.Consts["signals"])
	return t, nil
}

// patrolDocValue is an evaluated constant expression.
type patrolDocValue struct {
	str   string
	num   float64
	isStr bool
	isDur bool
}

var patrolDocUnits = map[string]time.Duration{"Nanosecond": time.Nanosecond, "Microsecond": time.Microsecond,
	"Millisecond": time.Millisecond, "Second": time.Second, "Minute": time.Minute, "Hour": time.Hour}

// patrolDocEvalAll evaluates every constant it can (literals, time units,
// references to other constants, + - * /); iota constants are left out.
func patrolDocEvalAll(raw map[string]*ast.ValueSpec, types map[string]string) map[string]patrolDocConst {
	out := map[string]patrolDocConst{}
	var eval func(e ast.Expr, depth int) (patrolDocValue, bool)
	eval = func(e ast.Expr, depth int) (patrolDocValue, bool) {
		if depth > 20 {
			return patrolDocValue{}, false
		}
		switch x := e.(type) {
		case *ast.BasicLit:
			switch x.Kind {
			case token.STRING:
				s, err := strconv.Unquote(x.Value)
				return patrolDocValue{str: s, isStr: true}, err == nil
			case token.INT, token.FLOAT:
				f, err := strconv.ParseFloat(x.Value, 64)
				return patrolDocValue{num: f}, err == nil
			}
		case *ast.ParenExpr:
			return eval(x.X, depth+1)
		case *ast.SelectorExpr:
			if pkg, ok := x.X.(*ast.Ident); ok && pkg.Name == "time" {
				if u, ok := patrolDocUnits[x.Sel.Name]; ok {
					return patrolDocValue{num: float64(u), isDur: true}, true
				}
			}
		case *ast.Ident:
			vs, ok := raw[x.Name]
			if !ok {
				return patrolDocValue{}, false
			}
			for i, id := range vs.Names {
				if id.Name == x.Name && i < len(vs.Values) {
					v, ok := eval(vs.Values[i], depth+1)
					if types[x.Name] == "Duration" {
						v.isDur = true
					}
					return v, ok
				}
			}
		case *ast.BinaryExpr:
			a, ok1 := eval(x.X, depth+1)
			b, ok2 := eval(x.Y, depth+1)
			if !ok1 || !ok2 || a.isStr || b.isStr {
				return patrolDocValue{}, false
			}
			v := patrolDocValue{isDur: a.isDur || b.isDur}
			switch x.Op {
			case token.MUL:
				v.num = a.num * b.num
			case token.ADD:
				v.num = a.num + b.num
			case token.SUB:
				v.num = a.num - b.num
			case token.QUO:
				v.num = a.num / b.num
			default:
				return patrolDocValue{}, false
			}
			return v, true
		}
		return patrolDocValue{}, false
	}
	for name := range raw {
		v, ok := eval(&ast.Ident{Name: name}, 0)
		if !ok {
			continue
		}
		c := patrolDocConst{Type: types[name], IsString: v.isStr}
		switch {
		case v.isStr:
			c.Value = v.str
		case v.isDur:
			c.Value = time.Duration(v.num).String()
		default:
			c.Value = strconv.FormatFloat(v.num, 'g', -1, 64)
		}
		out[name] = c
	}
	return out
}

// patrolDocCategories reads the switch of signals.Type.Category: each case
// lists type constants and returns a category constant; default covers the
// rest.
func patrolDocCategories(fd *ast.FuncDecl, consts map[string]patrolDocConst) map[string]string {
	out := map[string]string{}
	fallback := ""
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		cc, ok := n.(*ast.CaseClause)
		if !ok {
			return true
		}
		cat := ""
		for _, st := range cc.Body {
			if rs, ok := st.(*ast.ReturnStmt); ok && len(rs.Results) == 1 {
				if id, ok := rs.Results[0].(*ast.Ident); ok {
					cat = consts[id.Name].Value
				}
			}
		}
		if cc.List == nil {
			fallback = cat
		}
		for _, e := range cc.List {
			if id, ok := e.(*ast.Ident); ok {
				out[consts[id.Name].Value] = cat
			}
		}
		return false
	})
	for _, c := range consts {
		if c.Type == "Type" {
			if _, ok := out[c.Value]; !ok {
				out[c.Value] = fallback
			}
		}
	}
	return out
}

// set returns the string values of the constants of pkg whose name starts
// with prefix and (when typ is not "") whose declared type is typ.
func (t patrolDocTruth) set(pkg, prefix, typ string) map[string]bool {
	out := map[string]bool{}
	for name, c := range t.Consts[pkg] {
		if c.IsString && strings.HasPrefix(name, prefix) && (typ == "" || c.Type == typ) {
			out[c.Value] = true
		}
	}
	return out
}

// patrolDocBlock returns the cells (backticks kept) of the table rows
// between <!-- guard:NAME --> and <!-- /guard:NAME -->, header excluded.
func patrolDocBlock(doc, name string) ([][]string, bool) {
	start := strings.Index(doc, "<!-- guard:"+name+" -->")
	end := strings.Index(doc, "<!-- /guard:"+name+" -->")
	if start < 0 || end < start {
		return nil, false
	}
	var rows [][]string
	for i, line := range strings.Split(doc[start:end], "\n") {
		l := strings.TrimSpace(line)
		if !strings.HasPrefix(l, "|") || strings.HasPrefix(l, "|---") || strings.HasPrefix(l, "| ---") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		if _, ok := patrolDocTick(cells[0]); !ok && i <= 2 {
			continue // the header
		}
		rows = append(rows, cells)
	}
	return rows, true
}

func patrolDocTick(cell string) (string, bool) {
	if m := cfgCell.FindStringSubmatch(strings.TrimSpace(cell)); m != nil {
		return m[1], true
	}
	return "", false
}

// patrolDocCheckSet compares the first column of a guarded table with a set
// from the code, both directions.
func patrolDocCheckSet(doc, docName, block string, truth map[string]bool) []string {
	rows, ok := patrolDocBlock(doc, block)
	if !ok {
		return []string{fmt.Sprintf("%s: no <!-- guard:%s --> table", docName, block)}
	}
	if len(truth) == 0 {
		return []string{fmt.Sprintf("%s: %s: nothing found in the code (the guard lost track of it)", docName, block)}
	}
	var problems []string
	named := map[string]bool{}
	for _, r := range rows {
		v, ok := patrolDocTick(r[0])
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: %s row %q has no backticked first cell", docName, block, r[0]))
			continue
		}
		named[v] = true
		if !truth[v] {
			problems = append(problems, fmt.Sprintf("%s: %s table names %q, which the code does not declare", docName, block, v))
		}
	}
	for v := range truth {
		if !named[v] {
			problems = append(problems, fmt.Sprintf("%s: %s table misses %q, declared in the code", docName, block, v))
		}
	}
	return problems
}

// patrolDocSame compares a documented value with a code value: as
// durations, as numbers, or as text.
func patrolDocSame(doc, code string) bool {
	if a, err := time.ParseDuration(doc); err == nil {
		b, err := time.ParseDuration(code)
		return err == nil && a == b
	}
	if a, err := strconv.ParseFloat(doc, 64); err == nil {
		b, err := strconv.ParseFloat(code, 64)
		return err == nil && a == b
	}
	return doc == code
}

// patrolDocCheckConstants compares a guarded "| `Name` | `value` |" table
// with the constants of pkg; every name in required must be a row.
func patrolDocCheckConstants(doc, docName, block string, consts map[string]patrolDocConst, required []string) []string {
	rows, ok := patrolDocBlock(doc, block)
	if !ok {
		return []string{fmt.Sprintf("%s: no <!-- guard:%s --> table", docName, block)}
	}
	var problems []string
	named := map[string]bool{}
	for _, r := range rows {
		name, _ := patrolDocTick(r[0])
		named[name] = true
		c, ok := consts[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: constant %s is not in the code", docName, r[0]))
			continue
		}
		val := ""
		if len(r) > 1 {
			val, _ = patrolDocTick(r[1])
		}
		if !patrolDocSame(val, c.Value) {
			problems = append(problems, fmt.Sprintf("%s: %s is %q in the doc but %q in the code", docName, name, val, c.Value))
		}
	}
	for _, name := range required {
		if !named[name] {
			problems = append(problems, fmt.Sprintf("%s: %s table misses %s", docName, block, name))
		}
	}
	return problems
}

// patrolDocThresholdConsts maps each documented setting to the alerts
// constants of its trigger and critical ("" when it has none).
var patrolDocThresholdConsts = map[string][2]string{
	"node.cpu":              {"DefaultNodeCPU", ""},
	"node.memory":           {"DefaultNodeMemory", ""},
	"node.swap":             {"DefaultNodeSwap", ""},
	"node.iowait":           {"DefaultNodeIOWait", ""},
	"node.certificate":      {"DefaultCertificateDays", "DefaultCertificateDaysCrit"},
	"node.updates_age":      {"DefaultUpdatesAge", ""},
	"guest.cpu":             {"DefaultGuestCPU", ""},
	"guest.memory":          {"DefaultGuestMemory", ""},
	"guest.disk":            {"DefaultGuestDisk", "DefaultGuestDiskCrit"},
	"storage.usage":         {"DefaultStorageUsage", "DefaultStorageCrit"},
	"disk.temperature":      {"DefaultDiskTemperature", "DefaultDiskTemperatureCrit"},
	"disk.wear":             {"DefaultDiskWear", "DefaultDiskWearCrit"},
	"guest.forecast":        {"DefaultForecastDays", "DefaultForecastDaysCrit"},
	"guest.lock_age":        {"DefaultGuestLockAge", ""},
	"guest.snapshot_age":    {"DefaultGuestSnapshotAge", ""},
	"storage.forecast":      {"DefaultForecastDays", "DefaultForecastDaysCrit"},
	"storage.backup_jobs":   {"DefaultBackupJobs", "DefaultBackupJobsCrit"},
	"storage.scrub_age":     {"DefaultScrubAge", ""},
	"guest.replication":     {"DefaultReplicationFailures", "DefaultReplicationFailuresCrit"},
	"guest.replication_lag": {"DefaultReplicationLag", ""},
	"guest.verify_age":      {"DefaultVerifyAge", ""},
}

// patrolDocCounts are the settings that count failing items: their clear
// is the trigger itself.
var patrolDocCounts = map[string]bool{"storage.backup_jobs": true, "guest.replication": true, "guest.replication_lag": true, "node.updates_age": true, "guest.verify_age": true}

// patrolDocFalling are the settings whose threshold falls: their clear is
// trigger + DefaultClearMargin.
var patrolDocFalling = map[string]bool{"disk.wear": true, "node.certificate": true, "guest.forecast": true, "storage.forecast": true}

// patrolDocCheckThresholds checks the default thresholds table against the
// alerts constants (clear is trigger - DefaultClearMargin), and that every
// alerts Default* constant is covered.
func patrolDocCheckThresholds(doc string, consts map[string]patrolDocConst) []string {
	const docName = "PATROL_ARCHITECTURE.md"
	rows, ok := patrolDocBlock(doc, "thresholds")
	if !ok {
		return []string{docName + ": no <!-- guard:thresholds --> table"}
	}
	var problems []string
	value := func(name string) float64 {
		f, err := strconv.ParseFloat(consts[name].Value, 64)
		if err != nil {
			problems = append(problems, fmt.Sprintf("alerts: constant %s is missing or not a number", name))
		}
		return f
	}
	cell := func(r []string, i int) string {
		if i < len(r) {
			if v, ok := patrolDocTick(r[i]); ok {
				return v
			}
			return r[i]
		}
		return ""
	}
	named := map[string]bool{}
	for _, r := range rows {
		setting := cell(r, 0)
		named[setting] = true
		if setting == "backup.max_age" {
			if !patrolDocSame(cell(r, 1), consts["DefaultBackupMaxAge"].Value) {
				problems = append(problems, fmt.Sprintf("%s: backup.max_age is %q but DefaultBackupMaxAge is %q", docName, cell(r, 1), consts["DefaultBackupMaxAge"].Value))
			}
			continue
		}
		c, ok := patrolDocThresholdConsts[setting]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: thresholds table names %q, which has no alerts default", docName, setting))
			continue
		}
		trigger := value(c[0])
		margin := -value("DefaultClearMargin")
		if patrolDocFalling[setting] {
			margin = -margin
		}
		if patrolDocCounts[setting] {
			margin = 0
		}
		want := []string{strconv.FormatFloat(trigger, 'g', -1, 64), strconv.FormatFloat(trigger+margin, 'g', -1, 64), "none"}
		if c[1] != "" {
			want[2] = strconv.FormatFloat(value(c[1]), 'g', -1, 64)
		}
		for i, w := range want {
			if got := cell(r, i+1); !patrolDocSame(got, w) {
				problems = append(problems, fmt.Sprintf("%s: %s column %d is %q but the code gives %q", docName, setting, i+1, got, w))
			}
		}
	}
	used := map[string]bool{"DefaultClearMargin": true, "DefaultBackupMaxAge": true}
	for s, c := range patrolDocThresholdConsts {
		used[c[0]], used[c[1]] = true, true
		if !named[s] {
			problems = append(problems, fmt.Sprintf("%s: thresholds table misses %s", docName, s))
		}
	}
	if !named["backup.max_age"] {
		problems = append(problems, docName+": thresholds table misses backup.max_age")
	}
	for name := range consts {
		if strings.HasPrefix(name, "Default") && !used[name] {
			problems = append(problems, fmt.Sprintf("alerts declares %s, which the thresholds table does not cover", name))
		}
	}
	return problems
}

// patrolDocCheckSignals checks the catalogue: types both directions and
// each row's category against Type.Category.
func patrolDocCheckSignals(doc string, t patrolDocTruth) []string {
	problems := patrolDocCheckSet(doc, "PATROL_ARCHITECTURE.md", "signals", t.set("signals", "Type", "Type"))
	rows, _ := patrolDocBlock(doc, "signals")
	for _, r := range rows {
		typ, _ := patrolDocTick(r[0])
		cat := ""
		if len(r) >= 5 {
			cat, _ = patrolDocTick(r[4])
		}
		if want, ok := t.Categories[typ]; ok && cat != want {
			problems = append(problems, fmt.Sprintf("PATROL_ARCHITECTURE.md: %s has category %q in the doc but %q in the code", typ, cat, want))
		}
	}
	return problems
}

// patrolDocCheckKeyExamples runs the key normalisation table through
// findings.NormalizeKey.
func patrolDocCheckKeyExamples(doc string) []string {
	rows, ok := patrolDocBlock(doc, "keynorm")
	if !ok {
		return []string{"FINDINGS.md: no <!-- guard:keynorm --> table"}
	}
	var problems []string
	inTicks := regexp.MustCompile("`([^`]*)`")
	for _, r := range rows {
		want, _ := patrolDocTick(r[len(r)-1])
		for _, m := range inTicks.FindAllStringSubmatch(r[0], -1) {
			if got := findings.NormalizeKey(m[1]); got != want {
				problems = append(problems, fmt.Sprintf("FINDINGS.md: key %q normalises to %q, not %q", m[1], got, want))
			}
		}
	}
	return problems
}

var (
	patrolDocLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	patrolDocHeading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*$`)
	patrolDocSlugDel = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// patrolDocAnchors returns the GitHub anchors of the headings of a document.
func patrolDocAnchors(doc string) map[string]bool {
	out := map[string]bool{}
	fence := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if m := patrolDocHeading.FindStringSubmatch(line); m != nil && !fence {
			slug := patrolDocSlugDel.ReplaceAllString(strings.ToLower(m[1]), "")
			out[strings.ReplaceAll(slug, " ", "-")] = true
		}
	}
	return out
}

// patrolDocCheckLinks checks every relative link of doc: the file exists
// (relative to docs/) and a #anchor names a heading of its target.
func patrolDocCheckLinks(doc, docName string, read func(string) (string, bool)) []string {
	var problems []string
	for _, m := range patrolDocLink.FindAllStringSubmatch(doc, -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		file, anchor, _ := strings.Cut(target, "#")
		text := doc
		if file != "" {
			var ok bool
			if text, ok = read(file); !ok {
				problems = append(problems, fmt.Sprintf("%s: link to missing %s", docName, file))
				continue
			}
		}
		if anchor != "" && !patrolDocAnchors(text)[anchor] {
			problems = append(problems, fmt.Sprintf("%s: link %s: no heading with anchor #%s", docName, target, anchor))
		}
	}
	return problems
}

// patrolDocGateRequired are the gate constants the architecture doc states.
var patrolDocGateRequired = []string{"DefaultMaxAttempts", "DefaultCooldown", "DefaultTimeoutCooldown",
	"DefaultFixRetryCooldown", "DefaultInvestigationTTL", "DefaultMaxConcurrent", "StuckGrace"}

// patrolDocFindingsRequired are the constants the findings doc states.
var patrolDocFindingsRequired = []string{"MinSnooze", "MaxSnooze", "WillFixLaterRemind", "DismissedRetention",
	"MaxSilence", "MaxEventsPerFinding", "DefaultRepeatInterval", "DefaultFlapWindow", "DefaultFlapMaxTransitions",
	"MaxSilenceBackdate", "MaxSilenceLead", "DefaultPageLimit", "MaxPageLimit",
	"DefaultRunRetention", "MinRunRetention", "DefaultAuditRetention", "DefaultInvestigationRetention",
	"DefaultSessionRetention", "DefaultApprovalRetention", "DefaultSilenceRetention", "PruneBatch",
	"DefaultResolvedRetention", "DefaultEvidenceBudget"}

// checkPatrolDocs is the guard: sources and documents in, problems out.
func checkPatrolDocs(src map[string]map[string]string, arch, fnd string, read func(string) (string, bool)) []string {
	t, err := readPatrolDocTruth(src)
	if err != nil {
		return []string{err.Error()}
	}
	const a, f = "PATROL_ARCHITECTURE.md", "FINDINGS.md"
	var p []string
	p = append(p, patrolDocCheckSignals(arch, t)...)
	p = append(p, patrolDocCheckThresholds(arch, t.Consts["alerts"])...)
	p = append(p, patrolDocCheckSet(arch, a, "statuses", t.set("patrol", "Status", ""))...)
	p = append(p, patrolDocCheckSet(arch, a, "reasons", t.set("patrol", "Reason", ""))...)
	p = append(p, patrolDocCheckSet(arch, a, "refusals", t.set("findings", "Refuse", ""))...)
	p = append(p, patrolDocCheckConstants(arch, a, "gate", t.Consts["findings"], patrolDocGateRequired)...)
	p = append(p, patrolDocCheckSet(fnd, f, "severities", t.set("findings", "", "Severity"))...)
	p = append(p, patrolDocCheckSet(fnd, f, "categories", t.set("findings", "", "Category"))...)
	p = append(p, patrolDocCheckSet(fnd, f, "states", t.set("findings", "State", ""))...)
	p = append(p, patrolDocCheckSet(fnd, f, "actions", t.set("findings", "", "Action"))...)
	p = append(p, patrolDocCheckSet(fnd, f, "dismiss", t.set("findings", "Dismiss", ""))...)
	p = append(p, patrolDocCheckSet(fnd, f, "publish", t.set("findings", "Reason", ""))...)
	p = append(p, patrolDocCheckSet(fnd, f, "events", t.set("findings", "Event", ""))...)
	p = append(p, patrolDocCheckSet(fnd, f, "resolutions", t.set("findings", "Resolve", ""))...)
	// The findings constants table also states the store's bounds.
	findingsAndStore := maps.Clone(t.Consts["findings"])
	maps.Copy(findingsAndStore, t.Consts["store"])
	p = append(p, patrolDocCheckConstants(fnd, f, "findings-constants", findingsAndStore, patrolDocFindingsRequired)...)
	p = append(p, patrolDocCheckKeyExamples(fnd)...)
	// Every numeric Default* constant of findings is stated in one of the
	// two constants tables, so a new tunable cannot go undocumented.
	stated := map[string]bool{}
	for _, n := range append(append([]string{}, patrolDocGateRequired...), patrolDocFindingsRequired...) {
		stated[n] = true
	}
	for name, c := range t.Consts["findings"] {
		if strings.HasPrefix(name, "Default") && !c.IsString && !stated[name] {
			p = append(p, fmt.Sprintf("findings declares %s = %s, which no constants table states", name, c.Value))
		}
	}
	p = append(p, patrolDocCheckLinks(arch, a, read)...)
	p = append(p, patrolDocCheckLinks(fnd, f, read)...)
	sort.Strings(p)
	return p
}

// loadPatrolDocSources reads the non-test Go files of the guarded packages
// (repo root is ".."); a missing package fails the test.
func loadPatrolDocSources(t *testing.T) map[string]map[string]string {
	t.Helper()
	src := map[string]map[string]string{}
	for _, pkg := range patrolDocPackages {
		names, err := filepath.Glob(filepath.Join("..", pkg, "*.go"))
		if err != nil || len(names) == 0 {
			t.Fatalf("%s sources not found: %v", pkg, err)
		}
		src[pkg] = map[string]string{}
		for _, n := range names {
			if strings.HasSuffix(n, "_test.go") {
				continue
			}
			b, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			src[pkg][filepath.Base(n)] = string(b)
		}
	}
	return src
}

// patrolDocRead reads a file relative to docs/.
func patrolDocRead(name string) (string, bool) {
	b, err := os.ReadFile(filepath.FromSlash(name))
	return string(b), err == nil
}

func TestPatrolDocsMatchCode(t *testing.T) {
	src := loadPatrolDocSources(t)
	arch, fnd := readDoc(t, "PATROL_ARCHITECTURE.md"), readDoc(t, "FINDINGS.md")
	for _, p := range checkPatrolDocs(src, arch, fnd, patrolDocRead) {
		t.Error(p)
	}
	for _, p := range patrolDocCheckLinks(readDoc(t, "CONFIGURATION.md"), "CONFIGURATION.md", patrolDocRead) {
		t.Error(p)
	}
}

// TestPatrolDocsGuardFailsOnDrift runs the guard over mutated copies of the
// sources and the documents and checks that each change is reported.
func TestPatrolDocsGuardFailsOnDrift(t *testing.T) {
	src := loadPatrolDocSources(t)
	arch, fnd := readDoc(t, "PATROL_ARCHITECTURE.md"), readDoc(t, "FINDINGS.md")
	if p := checkPatrolDocs(src, arch, fnd, patrolDocRead); len(p) != 0 {
		t.Fatalf("baseline not clean: %v", p)
	}
	mutate := func(pkg, pattern, repl string) map[string]map[string]string {
		t.Helper()
		re := regexp.MustCompile(pattern)
		out := map[string]map[string]string{}
		hit := false
		for p, files := range src {
			out[p] = map[string]string{}
			for name, text := range files {
				if p == pkg && !hit && re.MatchString(text) {
					text, hit = re.ReplaceAllString(text, repl), true
				}
				out[p][name] = text
			}
		}
		if !hit {
			t.Fatalf("mutation target %q not found in %s", pattern, pkg)
		}
		return out
	}
	edit := func(doc, old, repl string) string {
		t.Helper()
		if !strings.Contains(doc, old) {
			t.Fatalf("mutation target %q not found", old)
		}
		return strings.Replace(doc, old, repl, 1)
	}
	type docs struct{ arch, fnd string }
	code := map[string]map[string]map[string]string{
		"max attempts changed":      mutate("findings", `DefaultMaxAttempts(\s*)= 3`, "DefaultMaxAttempts$1= 4"),
		"cooldown changed":          mutate("findings", `DefaultTimeoutCooldown(\s*)= 10 \* time.Minute`, "DefaultTimeoutCooldown$1= 15 * time.Minute"),
		"stuck grace changed":       mutate("findings", `StuckGrace = 5 \* time.Minute`, "StuckGrace = 2 * time.Minute"),
		"new gate tunable":          mutate("findings", `DefaultMaxConcurrent(\s*)= 3`, "DefaultMaxConcurrent$1= 3\n\tDefaultQueueDepth = 8"),
		"signal type added":         mutate("signals", `(TypeGuestUnreachable\s+Type = "guest_unreachable")`, "$1\n\tTypeHighLoad Type = \"high_load\""),
		"signal category moved":     mutate("signals", `return CategoryCapacity`, "return CategoryPerformance"),
		"threshold changed":         mutate("alerts", `DefaultGuestDisk(\s*)= 75.0`, "DefaultGuestDisk$1= 80.0"),
		"clear margin changed":      mutate("alerts", `DefaultClearMargin(\s*)= 5.0`, "DefaultClearMargin$1= 3.0"),
		"new alerts default":        mutate("alerts", `(DefaultStorageCrit(\s*)= 95.0)`, "$1\n\tDefaultNodeLoad = 4.0"),
		"loop state renamed":        mutate("findings", `"timed_out"\n`, "\"timeout\"\n"),
		"run status added":          mutate("patrol", `(StatusHealthy(\s*)= "healthy")`, "$1\n\tStatusSkipped = \"skipped\""),
		"status reason renamed":     mutate("patrol", `"empty_scope"`, `"no_resources"`),
		"publish reason added":      mutate("findings", `(ReasonFlapping(\s*)= "flapping")`, "$1\n\tReasonEscalated = \"escalated\""),
		"dismiss reason renamed":    mutate("findings", `"will_fix_later"`, `"later"`),
		"snooze bound changed":      mutate("findings", `MaxSnooze(\s*)= 168 \* time.Hour`, "MaxSnooze$1= 72 * time.Hour"),
		"gate refusal added":        mutate("findings", `(RefuseConcurrent = "max_concurrent")`, "$1\n\tRefuseQuiet = \"quiet_hours\""),
		"operator action added":     mutate("findings", `(ActionResolve(\s*)Action = "resolve")`, "$1\n\tActionEscalate Action = \"escalate\""),
		"repeat interval changed":   mutate("findings", `DefaultRepeatInterval(\s*)= 4 \* time.Hour`, "DefaultRepeatInterval$1= 2 * time.Hour"),
		"severity added":            mutate("findings", `(SeverityCritical Severity = "critical")`, "$1\n\tSeverityFatal Severity = \"fatal\""),
		"resolve reason added":      mutate("findings", `(ResolveFixVerified(\s*)= "fix_verified")`, "$1\n\tResolveExpired = \"expired\""),
		"categories lost by parser": mutate("signals", `func \(t Type\) Category\(\) string`, "func (t Type) Kategory() string"),
	}
	for name, s := range code {
		if got := checkPatrolDocs(s, arch, fnd, patrolDocRead); len(got) == 0 {
			t.Errorf("%s: the guard reported nothing", name)
		}
	}
	text := map[string]docs{
		"doc threshold drifts":   {edit(arch, "| `node.memory` | `80` | `75` |", "| `node.memory` | `85` | `80` |"), fnd},
		"doc critical invented":  {edit(arch, "| `node.cpu` | `70` | `65` | none |", "| `node.cpu` | `70` | `65` | `95` |"), fnd},
		"doc category drifts":    {edit(arch, "| warning | `backup` |", "| warning | `reliability` |"), fnd},
		"doc drops a signal":     {edit(arch, "| `high_memory` |", "| high_memory |"), fnd},
		"doc gate value drifts":  {edit(arch, "| `DefaultCooldown` | `1h` |", "| `DefaultCooldown` | `30m` |"), fnd},
		"doc names a state":      {arch, edit(fnd, "| `detected` |", "| `acknowledged` | x |\n| `detected` |")},
		"doc key example wrong":  {arch, edit(fnd, "| `ZFS Scrub!` | `zfs-scrub` |", "| `ZFS Scrub!` | `zfs_scrub` |")},
		"doc broken anchor":      {edit(arch, "(#investigation-gate)", "(#the-gate)"), fnd},
		"doc broken file link":   {arch, edit(fnd, "(NATS.md)", "(BUS.md)")},
		"doc snooze bound wrong": {arch, edit(fnd, "| `MaxSnooze` | `168h` |", "| `MaxSnooze` | `7d` |")},
		"doc lost a guard block": {arch, strings.ReplaceAll(fnd, "guard:dismiss", "dismiss")},
	}
	for name, d := range text {
		if got := checkPatrolDocs(src, d.arch, d.fnd, patrolDocRead); len(got) == 0 {
			t.Errorf("%s: the guard reported nothing", name)
		}
	}
	if got := patrolDocAnchors("# Run pipeline\n```\n# not a heading\n```\n## Complete and incomplete runs\n"); !got["run-pipeline"] || !got["complete-and-incomplete-runs"] || got["not-a-heading"] {
		t.Errorf("anchors: %v", got)
	}
}

package docs

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/snapshot"
)

// cfgKey is one configuration key as the code defines it.
type cfgKey struct {
	Path    string // "schedule.startup_delay", "http.tokens[].name", "model.prices.<name>.input_per_mtok"
	Kind    string // duration, number, string, bool, list, map, unset
	Default string // canonical default; "" for keys inside a list or map entry
	Element bool   // inside a list entry or a map value: no default of its own
}

var cfgDurationType = reflect.TypeOf(time.Duration(0))

// cfgKeysOf walks the koanf tags of t (with the matching default value v,
// which is invalid inside list and map entries) and returns every leaf key.
func cfgKeysOf(t reflect.Type, v reflect.Value, prefix string, elem bool, out *[]cfgKey) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("koanf"), ",")
		if name == "-" {
			continue
		}
		var fv reflect.Value
		if v.IsValid() {
			fv = v.Field(i)
		}
		if strings.Contains(opts, "squash") || (name == "" && f.Anonymous) {
			cfgKeysOf(f.Type, fv, prefix, elem, out)
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name) // mapstructure matches field names case-insensitively
		}
		cfgKeyAt(f.Type, fv, cfgJoin(prefix, name), elem, out)
	}
}

// cfgKeyAt records the key path of one field of type t.
func cfgKeyAt(t reflect.Type, v reflect.Value, path string, elem bool, out *[]cfgKey) {
	if t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
		switch {
		case v.IsValid() && !v.IsNil():
			v = v.Elem()
		case v.IsValid() && !elem:
			// An absent optional section (cluster): its keys' defaults
			// are what a present, empty section gives.
			v = reflect.Zero(t.Elem())
		default:
			v = reflect.Value{}
		}
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct && t.String() != "time.Time":
		cfgKeysOf(t, v, path, elem, out)
	case t.Kind() == reflect.Slice && cfgIsStruct(t.Elem()):
		*out = append(*out, cfgKey{Path: path, Kind: "list", Default: cfgFormat(v), Element: elem})
		cfgKeyAt(t.Elem(), reflect.Value{}, path+"[]", true, out)
	case t.Kind() == reflect.Map:
		*out = append(*out, cfgKey{Path: path, Kind: "map", Default: cfgFormat(v), Element: elem})
		if cfgIsStruct(t.Elem()) {
			cfgKeyAt(t.Elem(), reflect.Value{}, path+".<name>", true, out)
		} else {
			*out = append(*out, cfgKey{Path: path + ".<name>", Kind: cfgKindOf(t.Elem()), Element: true})
		}
	default:
		k := cfgKey{Path: path, Kind: cfgKindOf(t), Element: elem}
		if !elem {
			k.Default = cfgFormat(v)
			if v.Kind() == reflect.Pointer && v.IsNil() {
				k.Kind = "unset"
			}
		}
		*out = append(*out, k)
	}
}

func cfgIsStruct(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct && t.String() != "time.Time"
}

func cfgKindOf(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == cfgDurationType:
		return "duration"
	case t.Kind() == reflect.String:
		return "string"
	case t.Kind() == reflect.Bool:
		return "bool"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Float64:
		return "number"
	case t.Kind() == reflect.Slice:
		return "list"
	}
	return t.Kind().String()
}

func cfgJoin(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// cfgFormat renders a default value the way the doc shows it.
func cfgFormat(v reflect.Value) string {
	if !v.IsValid() {
		return ""
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "unset"
		}
		v = v.Elem()
	}
	switch {
	case v.Type() == cfgDurationType:
		return cfgShortDuration(time.Duration(v.Int()))
	case v.Kind() == reflect.String:
		if v.String() == "" {
			return `""`
		}
		return v.String()
	case v.Kind() == reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case v.Kind() >= reflect.Int && v.Kind() <= reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case v.Kind() >= reflect.Uint && v.Kind() <= reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case v.Kind() == reflect.Float32 || v.Kind() == reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case v.Kind() == reflect.Slice || v.Kind() == reflect.Map:
		if v.Len() == 0 {
			if v.Kind() == reflect.Map {
				return "{}"
			}
			return "[]"
		}
		b, _ := json.Marshal(v.Interface())
		return string(b)
	}
	return fmt.Sprint(v.Interface())
}

// cfgShortDuration drops zero trailing units: 6h0m0s -> 6h.
func cfgShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// cfgCodeKeys returns every key of config.Config with its default. Alert
// thresholds are pointers that are unset in Default(); their documented
// default is the effective one, resolved by the alerts package.
func cfgCodeKeys() ([]cfgKey, error) {
	def := config.Default()
	return cfgKeysFor(def, def.Alerts)
}

// cfgKeysFor derives the keys of any configuration value (the drift test
// passes altered ones); as is the alerts section whose effective defaults
// fill the unset threshold keys.
func cfgKeysFor(root any, as alerts.Settings) ([]cfgKey, error) {
	var keys []cfgKey
	cfgKeysOf(reflect.TypeOf(root), reflect.ValueOf(root), "", false, &keys)
	eff, err := cfgAlertDefaults(as)
	if err != nil {
		return nil, err
	}
	keys = cfgMirrored(keys)
	for i := range keys {
		if keys[i].Kind != "unset" {
			continue
		}
		if v, ok := eff[keys[i].Path]; ok {
			keys[i].Default = v
			keys[i].Kind = "number"
			if strings.HasSuffix(keys[i].Path, "max_age") {
				keys[i].Kind = "duration"
			}
			if v == "none" {
				keys[i].Kind = "string"
			}
		}
	}
	return keys, nil
}

// cfgMirrored drops the keys of a sources entry's sections: each is the
// source section's key of the same name (sources[].proxmox.url is
// source.proxmox.url), documented and shown once, there. A key of an
// entry with no such twin (its name, its kind) stays.
func cfgMirrored(keys []cfgKey) []cfgKey {
	have := map[string]bool{}
	for _, k := range keys {
		have[k.Path] = true
	}
	out := keys[:0:0]
	for _, k := range keys {
		rest, ok := strings.CutPrefix(k.Path, "sources[].")
		if ok && rest != "kind" && have["source."+rest] {
			continue
		}
		out = append(out, k)
	}
	return out
}

// cfgAlertDefaults resolves the effective default thresholds of every
// alerts.defaults key through alerts.Policy.
func cfgAlertDefaults(s alerts.Settings) (map[string]string, error) {
	p, err := alerts.New(s)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	put := func(setting string, th alerts.Threshold) {
		key := "alerts.defaults." + setting
		out[key+".trigger"] = strconv.FormatFloat(th.Trigger, 'g', -1, 64)
		out[key+".clear"] = strconv.FormatFloat(th.Clear, 'g', -1, 64)
		out[key+".critical"] = "none"
		if th.Critical > 0 {
			out[key+".critical"] = strconv.FormatFloat(th.Critical, 'g', -1, 64)
		}
	}
	node := p.Resolve(&snapshot.Resource{ID: "node/x", Kind: snapshot.KindNode})
	guest := p.Resolve(&snapshot.Resource{ID: "vm/x", Kind: snapshot.KindVM})
	storage := p.Resolve(&snapshot.Resource{ID: "storage/x", Kind: snapshot.KindStorage})
	disk := p.Resolve(&snapshot.Resource{ID: "disk/x", Kind: snapshot.KindDisk})
	put("node.cpu", node.CPU)
	put("node.memory", node.Memory)
	put("node.swap", node.Swap)
	put("node.iowait", node.IOWait)
	put("node.certificate", node.Certificate)
	put("node.updates_age", node.UpdatesAge)
	put("guest.cpu", guest.CPU)
	put("guest.memory", guest.Memory)
	put("guest.disk", guest.Disk)
	put("storage.usage", storage.Disk)
	put("guest.forecast", guest.Forecast)
	put("guest.lock_age", guest.LockAge)
	put("guest.snapshot_age", guest.SnapshotAge)
	put("storage.forecast", storage.Forecast)
	put("storage.backup_jobs", storage.BackupJobs)
	put("storage.scrub_age", storage.ScrubAge)
	put("guest.replication", guest.Replication)
	put("guest.replication_lag", guest.ReplicationLag)
	put("guest.verify_age", guest.VerifyAge)
	put("disk.temperature", disk.Temperature)
	put("disk.wear", disk.Wear)
	out["alerts.defaults.backup.max_age"] = cfgShortDuration(node.BackupMaxAge)
	return out, nil
}

// cfgDocRow is one row of a key table in CONFIGURATION.md.
type cfgDocRow struct {
	Key, Default string
	Line         int
}

var cfgCell = regexp.MustCompile("^`([^`]*)`$")

// cfgDocRows returns the rows of every table whose header starts with
// "| key | default |".
func cfgDocRows(doc string) []cfgDocRow {
	var rows []cfgDocRow
	inTable := false
	for i, line := range strings.Split(doc, "\n") {
		l := strings.TrimSpace(line)
		if !strings.HasPrefix(l, "|") {
			inTable = false
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		if len(cells) >= 2 && strings.EqualFold(cells[0], "key") && strings.EqualFold(cells[1], "default") {
			inTable = true
			continue
		}
		if !inTable || strings.HasPrefix(cells[0], "---") || strings.HasPrefix(cells[0], ":--") {
			continue
		}
		row := cfgDocRow{Line: i + 1}
		if m := cfgCell.FindStringSubmatch(cells[0]); m != nil {
			row.Key = m[1]
		} else {
			row.Key = cells[0] // reported as not backticked
		}
		if len(cells) > 1 {
			row.Default = cells[1]
		}
		rows = append(rows, row)
	}
	return rows
}

// cfgSameDefault compares a documented default cell with the code's.
func cfgSameDefault(k cfgKey, cell string) bool {
	m := cfgCell.FindStringSubmatch(strings.TrimSpace(cell))
	if m == nil {
		return false
	}
	doc := m[1]
	switch k.Kind {
	case "duration":
		a, err1 := time.ParseDuration(doc)
		b, err2 := time.ParseDuration(k.Default)
		return err1 == nil && err2 == nil && a == b
	case "number":
		a, err1 := strconv.ParseFloat(doc, 64)
		b, err2 := strconv.ParseFloat(k.Default, 64)
		return err1 == nil && err2 == nil && a == b
	case "list", "map":
		var a, b any
		if json.Unmarshal([]byte(doc), &a) != nil || json.Unmarshal([]byte(k.Default), &b) != nil {
			return false
		}
		return reflect.DeepEqual(a, b)
	}
	return doc == k.Default
}

// checkConfigDoc is the guard: keys from code against the key tables of the
// document, both directions, with defaults.
func checkConfigDoc(keys []cfgKey, doc string) []string {
	var problems []string
	code := map[string]cfgKey{}
	for _, k := range keys {
		code[k.Path] = k
	}
	rows := cfgDocRows(doc)
	if len(rows) == 0 {
		return []string{"CONFIGURATION.md: no | key | default | tables"}
	}
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r.Key] {
			problems = append(problems, fmt.Sprintf("CONFIGURATION.md:%d: %s is documented twice", r.Line, r.Key))
		}
		seen[r.Key] = true
		k, ok := code[r.Key]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("CONFIGURATION.md:%d: %q is not a configuration key in the code", r.Line, r.Key))
		case k.Element:
			if strings.TrimSpace(r.Default) == "" {
				problems = append(problems, fmt.Sprintf("CONFIGURATION.md:%d: %s has an empty default cell", r.Line, r.Key))
			}
		case !cfgSameDefault(k, r.Default):
			problems = append(problems, fmt.Sprintf("CONFIGURATION.md:%d: %s default is %s in the doc but `%s` in the code", r.Line, r.Key, r.Default, k.Default))
		}
	}
	for _, k := range keys {
		if !seen[k.Path] {
			def := "`" + k.Default + "`"
			if k.Element {
				def = "(entry key)"
			}
			problems = append(problems, fmt.Sprintf("CONFIGURATION.md: key %s is missing (default %s)", k.Path, def))
		}
	}
	sort.Strings(problems)
	return problems
}

// readDoc is the text of a file under docs/; a guard cannot run
// without it.
func readDoc(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("required file: %v", err)
	}
	return string(b)
}

func TestConfigDocMatchesCode(t *testing.T) {
	keys, err := cfgCodeKeys()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) < 40 {
		t.Fatalf("only %d keys derived from config.Config: the walker is broken", len(keys))
	}
	for _, p := range checkConfigDoc(keys, readDoc(t, "CONFIGURATION.md")) {
		t.Error(p)
	}
}

var cfgYAMLKey = regexp.MustCompile(`^( *)(- +)?([a-z][a-z0-9_.-]*):(\s|$)`)

// cfgYAMLMentions returns every key path the example names, in live lines
// and in commented-out example lines ("# " removed once). Entries of lists
// appear as "[]", keys under a map key (mapPaths) as "<name>".
func cfgYAMLMentions(text string, mapPaths map[string]bool) map[string]bool {
	type level struct {
		indent int
		path   string
	}
	out := map[string]bool{}
	stack := []level{{-1, ""}}
	pop := func(indent int) string {
		for len(stack) > 1 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		return stack[len(stack)-1].path
	}
	for _, line := range strings.Split(text, "\n") {
		lead := len(line) - len(strings.TrimLeft(line, " "))
		content := line[lead:]
		if strings.HasPrefix(content, "#") {
			content = strings.TrimPrefix(strings.TrimPrefix(content, "#"), " ")
		}
		m := cfgYAMLKey.FindStringSubmatch(content)
		if m == nil {
			continue
		}
		indent := lead + len(m[1])
		parent := pop(indent)
		if m[2] != "" {
			parent += "[]"
			stack = append(stack, level{indent, parent})
			indent += len(m[2])
		}
		key := m[3]
		if mapPaths[parent] {
			key = "<name>"
		}
		path := cfgJoin(parent, key)
		out[path] = true
		stack = append(stack, level{indent, path})
	}
	return out
}

// checkExampleMentions reports keys the example never names and names that
// are not keys (nor sections of keys).
func checkExampleMentions(keys []cfgKey, example string) []string {
	known, maps := map[string]bool{}, map[string]bool{}
	for _, k := range keys {
		for p := k.Path; p != ""; {
			known[p] = true
			i := strings.LastIndexAny(p, ".[")
			if i < 0 {
				break
			}
			p = p[:i]
		}
		if k.Kind == "map" {
			maps[k.Path] = true
		}
	}
	mentions := cfgYAMLMentions(example, maps)
	var problems []string
	for _, k := range keys {
		if !mentions[k.Path] {
			problems = append(problems, "patrold.example.yaml: key "+k.Path+" is not shown")
		}
	}
	for m := range mentions {
		if !known[m] {
			problems = append(problems, "patrold.example.yaml: "+m+" is not a configuration key")
		}
	}
	sort.Strings(problems)
	return problems
}

func TestExampleConfigIsDefaults(t *testing.T) {
	example := readDoc(t, "../deploy/patrold.example.yaml")
	cfg, err := config.Load([]byte(example), nil)
	if err != nil {
		t.Fatalf("the example does not load: %v", err)
	}
	if got, want := cfg.String(), config.Default().String(); got != want {
		t.Errorf("the example is not the defaults:\n--- example\n%s\n--- defaults\n%s", got, want)
	}
	keys, err := cfgCodeKeys()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range checkExampleMentions(keys, example) {
		t.Error(p)
	}
}

// TestConfigGuardFailsOnDrift changes the code's view and the documents
// under the guard and checks that each change is reported.
func TestConfigGuardFailsOnDrift(t *testing.T) {
	doc := readDoc(t, "CONFIGURATION.md")
	example := readDoc(t, "../deploy/patrold.example.yaml")
	def := config.Default()
	keys, err := cfgKeysFor(def, def.Alerts)
	if err != nil {
		t.Fatal(err)
	}
	if p := checkConfigDoc(keys, doc); len(p) != 0 {
		t.Fatalf("baseline not clean: %v", p)
	}
	type withExtra struct {
		config.Config `koanf:",squash"`
		Extra         time.Duration `koanf:"extra_key"`
	}
	extra, err := cfgKeysFor(withExtra{Config: def, Extra: time.Minute}, def.Alerts)
	if err != nil {
		t.Fatal(err)
	}
	slower := def
	slower.Schedule.StartupDelay = 45 * time.Second
	changedDefault, _ := cfgKeysFor(slower, def.Alerts)
	cpu := 72.0
	hotter := def.Alerts
	hotter.Defaults.Node.CPU.Trigger = &cpu
	changedAlert, err := cfgKeysFor(def, hotter)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(s, old, repl string) string {
		t.Helper()
		if !strings.Contains(s, old) {
			t.Fatalf("mutation target %q not found", old)
		}
		return strings.Replace(s, old, repl, 1)
	}
	docCases := map[string]struct {
		keys []cfgKey
		doc  string
	}{
		"key added in code":           {extra, doc},
		"default changed in code":     {changedDefault, doc},
		"alert default changed":       {changedAlert, doc},
		"doc default drifts":          {keys, edit(doc, "| `schedule.startup_delay` | `30s` |", "| `schedule.startup_delay` | `45s` |")},
		"doc drops a key":             {keys, edit(doc, "| `nats.subject_prefix` |", "| nats subject prefix |")},
		"doc names an unknown key":    {keys, edit(doc, "| `log.level` |", "| `log.colour` | `auto` | x |\n| `log.level` |")},
		"doc duration in other units": {keys, edit(doc, "| `findings.repeat_interval` | `4h` |", "| `findings.repeat_interval` | `4m` |")},
		"no key tables":               {keys, "# Configuration\n"},
	}
	for name, c := range docCases {
		if got := checkConfigDoc(c.keys, c.doc); len(got) == 0 {
			t.Errorf("%s: the guard reported nothing", name)
		}
	}
	if got := checkConfigDoc(keys, edit(doc, "| `findings.resolved_retention` | `720h` |", "| `findings.resolved_retention` | `720h0m0s` |")); len(got) != 0 {
		t.Errorf("an equal duration in long form was refused: %v", got)
	}
	exampleCases := map[string]string{
		"example misses a key":        edit(example, "  max_concurrent: 3\n", ""),
		"example misses an entry key": edit(example, "  #     scope: admin ", "  #     scopes: admin "),
		"example names unknown key":   edit(example, "  evidence_budget: 10", "  evidence_budget: 10\n  # evidence_limit: 10"),
	}
	for name, ex := range exampleCases {
		if got := checkExampleMentions(keys, ex); len(got) == 0 {
			t.Errorf("%s: the guard reported nothing", name)
		}
	}
	if got := checkExampleMentions(extra, example); len(got) == 0 {
		t.Error("a key added in code but missing from the example was not reported")
	}
}

// FuzzCfgDocParsers feeds arbitrary text to the table and YAML readers:
// they must not panic, and every row they return has a key.
func FuzzCfgDocParsers(f *testing.F) {
	f.Add("| key | default | meaning |\n|---|---|---|\n| `a.b` | `1` | x |\n")
	f.Add("a:\n  - b: 1\n  # - c: 2\n#d:\n")
	f.Add("| key | default |\n| `x` |\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range cfgDocRows(s) {
			if r.Line < 1 {
				t.Fatalf("row without a line: %+v", r)
			}
		}
		for m := range cfgYAMLMentions(s, map[string]bool{"a": true}) {
			if m == "" {
				t.Fatal("empty key path")
			}
		}
	})
}

// cfgPromtool returns the promtool binary, skipping only outside CI.
func cfgPromtool(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is required in CI: ", err)
		}
		t.Skip("promtool not on PATH")
	}
	return bin
}

// TestPrometheusRules checks the daemon's alerting rules with promtool and
// runs their unit tests (deploy/prometheus-rules.test.yml).
func TestPrometheusRules(t *testing.T) {
	bin := cfgPromtool(t)
	for _, args := range [][]string{
		{"check", "rules", "prometheus-rules.yml"},
		{"test", "rules", "prometheus-rules.test.yml"},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = filepath.Join("..", "deploy")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
